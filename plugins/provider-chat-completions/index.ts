/**
 * `provider: chat_completions`: backends that speak the Chat Completions API, which is also what
 * clients speak to the gateway, so nothing is translated: the request goes to the same path the
 * client called and the answer (JSON or SSE) comes back byte for byte. The gateway still applies
 * its own steps (model rewrite, `stream_options.include_usage` on streams, headers).
 */
import { ChatStreamWatch, type ProviderDefinition } from "../../core/llm/provider.ts";
import { definePlugin } from "../../core/plugins/types.ts";

/** The hosted Chat Completions API; any compatible server is set with `inference_url`. */
export const CHAT_COMPLETIONS_DEFAULT_URL = "https://api.openai.com";

export const chatCompletionsProvider: ProviderDefinition = {
  name: "chat_completions",
  defaultUrl: CHAT_COMPLETIONS_DEFAULT_URL,
  // No translation: the body already is in the client's format. Streams are only watched, for
  // their end (`[DONE]` or a `finish_reason`) and the usage of their last chunk.
  createTranslator: () => {
    const watch = new ChatStreamWatch();
    return { observeStreamEvent: (event) => watch.event(event), streamProgress: () => watch.progress() };
  },
};

export default definePlugin({
  name: "provider-chat-completions",
  dependsOn: ["providers"],
  setup(api) {
    api.use("providers").register(chatCompletionsProvider);
  },
});
