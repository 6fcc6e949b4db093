/**
 * The batch APIs (`batches.enabled`): OpenAI's Files and Batches and Anthropic's Message
 * Batches, run by the gateway itself on any configured model. Files stream into the object
 * store; batches and their lines live in the key-value store, where every gateway process takes
 * lines with a lease and runs each through the same LLM path as a direct request of the batch's
 * owner. See docs/batches.md.
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { batchesSection } from "./config.ts";
import { registerFileRoutes } from "./files/routes.ts";
import { FileStore } from "./files/store.ts";
import { spanMs } from "./span.ts";

/** How often each process deletes the files past their retention. */
const FILE_SWEEP_MS = 60_000;

export default definePlugin({
  name: "batches",
  section: batchesSection,
  enabled: (config) => config.batches.enabled,
  setup(api) {
    const section = api.section;
    const files = new FileStore({
      kv: api.kv,
      objects: api.objects,
      now: () => api.clock.now(),
      uuid: () => api.ids.newId(),
      retentionMs: spanMs(section.retention) ?? 0,
    });
    registerFileRoutes(api, files);
    api.task({ name: "batches.files", everyMs: FILE_SWEEP_MS, run: () => files.sweep().then(() => undefined) });
  },
});
