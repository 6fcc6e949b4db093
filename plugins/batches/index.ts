/**
 * The batch APIs (`batches.enabled`): OpenAI's Files and Batches and Anthropic's Message
 * Batches, run by the gateway itself on any configured model. Files stream into the object
 * store; batches and their lines live in the key-value store. Lines run where the relay runs
 * (the embedded relay in a gateway, every standalone relay process): each process with the
 * relay takes lines with a lease and runs each through the same LLM path as a direct request of
 * the batch's owner (`api.dispatchAs`; a relay process runs the gateway's plugins for it, see
 * `dispatches`). The routes are the gateway's; the sweep runs in both, so batches move along
 * while either kind of process is up. See docs/batches.md#how-lines-run.
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { registerAdminRoutes } from "./admin.ts";
import { BatchEngine } from "./batches/engine.ts";
import { registerBatchRoutes } from "./batches/routes.ts";
import { LINE_LEASE_MS } from "./batches/worker.ts";
import { batchesSection } from "./config.ts";
import { batchesPanel } from "./console-panel.ts";
import { registerFileRoutes } from "./files/routes.ts";
import { FileStore } from "./files/store.ts";
import { batchMetrics } from "./metrics.ts";
import { batchesOpenApi } from "./openapi.ts";
import { registerMessageBatchRoutes } from "./messages/routes.ts";
import { spanMs } from "./span.ts";
import { notifyEnded, OUTBOX_SWEEP_MS, sweepOutbox } from "./webhook.ts";

/** How often each gateway process deletes the files past their retention. */
const FILE_SWEEP_MS = 60_000;
/** How often each process looks for batches to move along and lapsed line leases. */
const SWEEP_MS = 250;
/** How often each process with the relay starts lines of models that were idle (a line's end starts the next at once). */
const LINES_MS = 100;

/** The batch engine of this process, for health checks and tests. */
export interface BatchesService {
  /** Lines running in this process. */
  readonly busy: number;
  /** Resolves when this process's lines and batch work have ended. */
  idle(): Promise<void>;
}

declare module "../../core/plugins/types.ts" {
  interface GatewayServices {
    batches: BatchesService;
  }
}

export default definePlugin({
  name: "batches",
  section: batchesSection,
  // A batch's callback_url is vetted and notified by the webhooks plugin; lines run where the relay is active.
  optionalDependsOn: ["webhooks", "relay"],
  openapi: batchesOpenApi,
  consolePanels: [batchesPanel],
  roles: ["gateway", "relay"],
  // Every line goes through the gateway's own pipeline (api.dispatchAs), in a relay process too.
  dispatches: () => true,
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
    // deno-lint-ignore prefer-const -- the engine's events need its store, which the engine builds
    let engine: BatchEngine;
    engine = new BatchEngine(
      api,
      section,
      files,
      batchMetrics(api.metrics, (batch) => {
        void notifyEnded(api, engine.store, batch).catch((error: unknown) => api.log.warn("batch_notify_failed", { batch_id: batch.id, error }));
      }),
    );
    api.provide("batches", {
      get busy() {
        return engine.worker.busy;
      },
      idle: () => engine.idle(),
    });
    if (api.role === "gateway") {
      registerFileRoutes(api, files);
      registerBatchRoutes(api, engine, files);
      registerMessageBatchRoutes(api, engine, files);
      registerAdminRoutes(api, engine);
      // A deployment always has gateways, while relays may scale to zero (as the GC).
      api.task({ name: "batches.files", everyMs: FILE_SWEEP_MS, run: () => files.sweep().then(() => undefined) });
      api.task({ name: "batches.notify", everyMs: OUTBOX_SWEEP_MS, run: () => sweepOutbox(api, engine.store) });
    }
    // Validating, ending and lapsed leases: in every process, so a batch moves along while gateways or relays are up.
    api.task({ name: "batches.sweep", everyMs: SWEEP_MS, runAtStart: true, run: () => engine.sweep.tick() });
    if (api.has("relay")) {
      api.task({ name: "batches.lines", everyMs: LINES_MS, runAtStart: true, run: () => engine.worker.poll() });
      api.task({ name: "batches.leases", everyMs: LINE_LEASE_MS / 3, run: () => engine.worker.renew() });
    }
    // A reload lets running lines finish; shutdown gives them a grace period, then puts them back.
    api.onRetire(() => engine.worker.retire());
    api.onClose(async () => {
      await engine.worker.close();
      await engine.sweep.idle();
    });
  },
});
