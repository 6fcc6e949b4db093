/**
 * `provider: local_chat`: a local model runtime's chat endpoint, `/api/chat`. Clients keep
 * speaking chat completions to the gateway (any `/v1/*` path); requests go to `/api/chat` and
 * answers, including the runtime's NDJSON streams, come back as chat completions (tables in
 * chat-to-local.ts and local-to-chat.ts).
 */
import type { JsonObject, ProviderDefinition } from "../../core/llm/provider.ts";
import { wantsStreamUsage } from "../../core/llm/provider.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { chatToLocalRequest } from "./chat-to-local.ts";
import { LocalStreamTranslator, localToChatError, localToChatResponse } from "./local-to-chat.ts";

/** Where such runtimes listen by default. */
export const LOCAL_CHAT_DEFAULT_URL = "http://127.0.0.1:11434";
export const LOCAL_CHAT_PATH = "/api/chat";

export const localChatProvider: ProviderDefinition = {
  name: "local_chat",
  defaultUrl: LOCAL_CHAT_DEFAULT_URL,
  streamFormat: "ndjson",
  backendPath: () => LOCAL_CHAT_PATH,
  createTranslator(context) {
    let includeUsage = false;
    const stream = new LocalStreamTranslator(context, () => includeUsage);
    return {
      translateRequest(body: JsonObject) {
        includeUsage = wantsStreamUsage(body);
        return chatToLocalRequest(body);
      },
      translateResponse: (body) => localToChatResponse(body, context),
      translateStreamEvent: (event) => stream.event(event),
      streamProgress: () => stream.progress(),
      translateError: localToChatError,
    };
  },
};

export default definePlugin({
  name: "provider-local-chat",
  dependsOn: ["providers"],
  setup(api) {
    api.use("providers").register(localChatProvider);
  },
});
