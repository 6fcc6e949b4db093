/**
 * The `responses` client protocol: clients that speak the OpenAI Responses API (`POST
 * /v1/responses`, `/v1/responses/input_tokens`) on any LLM backend, with the responses stored
 * in the key-value store (`responses.store_ttl`, encrypted with `object_store.encryption.key`
 * when set) and the routes that read and delete them. A provider that speaks the Responses API
 * (`responses_api`) gets the requests as they are; any other gets chat completions carrying
 * the whole conversation. See docs/responses.md. On when some service sets `provider`.
 */
import { listsAnyPath } from "../../core/llm/protocol-errors.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { responsesSection, spanMs } from "./config.ts";
import { responsesOpenApi } from "./openapi.ts";
import { RESPONSES_PATH, responsesProtocol } from "./protocol.ts";
import { registerResponseRoutes } from "./routes.ts";
import { sealerFor } from "./sealed.ts";
import { ResponseStore } from "./store.ts";

export default definePlugin({
  name: "protocol-responses",
  dependsOn: ["providers"],
  section: responsesSection,
  openapi: responsesOpenApi,
  enabled: (config) => config.services.some((service) => service.provider !== ""),
  setup(api) {
    const store = new ResponseStore(api.kv, sealerFor(api.config.object_store.encryption.key), spanMs(api.section.store_ttl) ?? 0);
    api.use("clientProtocols").register(
      responsesProtocol({ store, newId: () => api.ids.newId(), now: () => api.clock.now(), log: api.log }),
    );
    // The stored responses' routes, where some service takes Responses requests.
    if (listsAnyPath(api.config.services, [RESPONSES_PATH])) registerResponseRoutes(api, store);
  },
});
