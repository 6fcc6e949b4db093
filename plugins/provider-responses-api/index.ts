/**
 * `provider: responses_api`: backends that speak the OpenAI Responses API themselves. Requests
 * in the Responses client protocol (`POST /v1/responses`, `/v1/responses/input_tokens`) go to
 * them as they are (`speaks`): only the model rewritten, `inference_headers` and the caller's
 * identity headers applied, to the path the client called; the answer comes back as it is, its
 * usage read from the Response and from a stream's `response.completed` (the protocol's
 * watch, plugins/protocol-responses/native.ts). Failover and ejection apply as to any backend.
 * The backend keeps the conversation (`previous_response_id`); the gateway keeps a copy of
 * each stored answer for its own routes (docs/responses.md#native-backends).
 *
 * A Chat Completions (or Messages) request to such a service has no translation here: it is
 * refused with 400, saying which path to use.
 */
import { type ProviderDefinition, withCredentials } from "../../core/llm/provider.ts";
import { definePlugin } from "../../core/plugins/types.ts";

/** The hosted Responses API; set `inference_url` for any other. */
export const RESPONSES_API_DEFAULT_URL = "https://api.openai.com";

export const responsesApiProvider: ProviderDefinition = {
  name: "responses_api",
  defaultUrl: RESPONSES_API_DEFAULT_URL,
  streamFormat: "sse",
  speaks: ["responses"],
  // The backend's `api_key` as a bearer token, instead of the caller's credentials.
  authorize: (request, call) =>
    call.backend.api_key === "" ? { ...request.headers } : withCredentials(request.headers, { authorization: `Bearer ${call.backend.api_key}` }),
  createTranslator: () => ({
    translateRequest: () => {
      throw new Error("this model's backend speaks the Responses API only: send POST /v1/responses");
    },
  }),
};

export default definePlugin({
  name: "provider-responses-api",
  dependsOn: ["providers"],
  setup(api) {
    api.use("providers").register(responsesApiProvider);
  },
});
