/**
 * `provider: passthrough`: forwarded verbatim, for a backend whose protocol the gateway need
 * not understand. The request body and the answer (any content type, JSON or not, streamed or
 * not) pass unchanged; the gateway's own steps still apply (backend failover, model rewrite,
 * `stream_options.include_usage` on `"stream": true`, headers, cache, metrics). Token accounting
 * happens only when the answer happens to carry a top-level `usage {prompt_tokens,
 * completion_tokens}` (docs/design.md#usage-requirement).
 *
 * There is no default address: a passthrough backend is whatever `inference_url` or
 * `backends[]` say.
 */
import type { ProviderDefinition } from "../../core/llm/provider.ts";
import { definePlugin } from "../../core/plugins/types.ts";

export const passthroughProvider: ProviderDefinition = {
  name: "passthrough",
  defaultUrl: "",
  // Verbatim whatever the client speaks: `/v1/messages` goes on as it is, as it always did.
  speaks: "all",
  createTranslator: () => ({}),
};

export default definePlugin({
  name: "provider-passthrough",
  dependsOn: ["providers"],
  setup(api) {
    api.use("providers").register(passthroughProvider);
  },
});
