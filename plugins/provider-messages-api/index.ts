/**
 * `provider: messages_api`: backends that speak a Messages-style API. Clients keep speaking
 * chat completions; requests, responses, errors and streams are translated both ways (the
 * tables are in the files named by the protocol pair). Whatever path the client called, the
 * request goes to the backend's Messages endpoint, `/v1/messages`. Clients that speak Messages
 * themselves (`POST /v1/messages`, the `messages` client protocol) are forwarded untranslated
 * (`speaks`).
 *
 * Such APIs want a version header and an API key header: `backends[].api_key` goes in
 * `x-api-key`, or they are plain `inference_headers` (or `backends[].headers`). `provider:
 * anthropic` is the same protocol with Anthropic's own: the key, and `anthropic-version` unless
 * the headers set one.
 */
import type { BackendCall, JsonObject, OutgoingRequest, ProviderDefinition } from "../../core/llm/provider.ts";
import { wantsStreamUsage, withCredentials } from "../../core/llm/provider.ts";
import { COUNT_TOKENS_PATH, MESSAGES_PATH } from "../../core/llm/messages.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { chatToMessagesRequest } from "./chat-to-messages.ts";
import { messagesToChatError, messagesToChatResponse } from "./messages-to-chat.ts";
import { MessagesStreamTranslator } from "./messages-stream-to-chat.ts";

/** The hosted Messages API; set `inference_url` for any other. */
export const MESSAGES_API_DEFAULT_URL = "https://api.anthropic.com";

export const messagesApiProvider: ProviderDefinition = {
  name: "messages_api",
  defaultUrl: MESSAGES_API_DEFAULT_URL,
  streamFormat: "sse",
  // Token counting is the one other endpoint a Messages client calls (inbound, untranslated).
  backendPath: (clientPath) => (clientPath === COUNT_TOKENS_PATH ? COUNT_TOKENS_PATH : MESSAGES_PATH),
  // Messages clients' requests go as they are (the Messages client protocol reads their answers).
  speaks: ["messages"],
  createTranslator(context) {
    let includeUsage = false;
    const stream = new MessagesStreamTranslator(context, () => includeUsage);
    return {
      translateRequest(body: JsonObject) {
        // Remembered for the stream: the usage chunk is sent only when the client's request asked for it.
        includeUsage = wantsStreamUsage(body);
        return chatToMessagesRequest(body);
      },
      translateResponse: (body) => messagesToChatResponse(body, context),
      translateStreamEvent: (event) => stream.event(event),
      streamProgress: () => stream.progress(),
      translateError: messagesToChatError,
    };
  },
  authorize: (request: OutgoingRequest, call: BackendCall) =>
    call.backend.api_key === "" ? { ...request.headers } : withCredentials(request.headers, { "x-api-key": call.backend.api_key }),
};

/** The version of Anthropic's API the translations follow. */
export const ANTHROPIC_VERSION = "2023-06-01";

/** `provider: anthropic`: `messages_api` with Anthropic's address, its key in `x-api-key` and `anthropic-version`. */
export const anthropicProvider: ProviderDefinition = {
  ...messagesApiProvider,
  name: "anthropic",
  authorize(request: OutgoingRequest, call: BackendCall) {
    const headers = { "anthropic-version": ANTHROPIC_VERSION, ...request.headers };
    return call.backend.api_key === "" ? headers : withCredentials(headers, { "x-api-key": call.backend.api_key });
  },
};

export default definePlugin({
  name: "provider-messages-api",
  dependsOn: ["providers"],
  setup(api) {
    api.use("providers").register(messagesApiProvider);
    api.use("providers").register(anthropicProvider);
  },
});
