/**
 * A custom LLM provider, loaded like any user plugin:
 *
 *   plugins:
 *     load: [./examples/custom-provider.ts]
 *   services:
 *     - type: chat
 *       model: loud
 *       provider: shouting
 *       inference_url: http://127.0.0.1:8000   # any Chat Completions backend
 *       operations: { chat: [/v1/chat/completions] }
 *
 * "shouting" speaks Chat Completions to its backend and upper-cases what the assistant says,
 * in whole answers and in streams. It shows every part of the provider API
 * (core/llm/provider.ts): a name, a default address, and a per-request translator with a
 * request, response, stream-event and error translation. The gateway does the rest: backend
 * choice and failover, headers, the cache, metrics and token accounting (from `usage`).
 */
import {
  chatError,
  definePlugin,
  errorTypeFor,
  isRecord,
  type JsonObject,
  type OutEvent,
  type ProviderDefinition,
  type StreamEvent,
  type TranslatedResponse,
  usageOf,
} from "inference-gateway/plugin";

/** Upper-cases `choices[].message.content` (whole answers) or `choices[].delta.content` (stream chunks). */
function shout(body: JsonObject, part: "message" | "delta"): JsonObject {
  if (!Array.isArray(body.choices)) return body;
  const choices = body.choices.map((choice: unknown) => {
    if (!isRecord(choice) || !isRecord(choice[part])) return choice;
    const inner = choice[part];
    return typeof inner.content === "string" ? { ...choice, [part]: { ...inner, content: inner.content.toUpperCase() } } : choice;
  });
  return { ...body, choices };
}

export const shouting: ProviderDefinition = {
  name: "shouting",
  defaultUrl: "http://127.0.0.1:8000",
  // `backendPath` is left out: the request goes to the path the client called.
  createTranslator: () => ({
    translateRequest(body: JsonObject): JsonObject {
      // Ask politely for short answers; everything else goes as the client sent it.
      return { ...body, messages: [{ role: "system", content: "Answer briefly." }, ...(Array.isArray(body.messages) ? body.messages : [])] };
    },
    translateResponse(body: unknown): TranslatedResponse {
      if (!isRecord(body)) throw new Error("expected a JSON object from the backend");
      // Unknown usage stays unknown: usageOf answers undefined rather than zeros.
      return { body: shout(body, "message"), usage: usageOf(body) };
    },
    translateStreamEvent(event: StreamEvent): OutEvent[] {
      // The gateway parsed the SSE once; `json` is undefined for `[DONE]`, which passes as is.
      return [{ data: isRecord(event.json) ? shout(event.json, "delta") : event.data }];
    },
    translateError(status: number, body: unknown): JsonObject {
      const message = isRecord(body) && isRecord(body.error) && typeof body.error.message === "string" ? body.error.message : `backend answered ${status}`;
      return chatError(message.toUpperCase(), errorTypeFor(status));
    },
  }),
};

export default definePlugin({
  name: "provider-shouting",
  dependsOn: ["providers"],
  setup(api) {
    api.use("providers").register(shouting);
  },
});
