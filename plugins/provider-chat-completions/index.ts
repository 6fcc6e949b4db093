/**
 * `provider: chat_completions`: backends that speak the Chat Completions API, which is also what
 * clients speak to the gateway, so nothing is translated: the request goes to the same path the
 * client called and the answer (JSON or SSE) comes back byte for byte. The gateway still applies
 * its own steps (model rewrite, `stream_options.include_usage` on streams, headers).
 *
 * The same protocol under the names people type: `openai` and the OpenAI-compatible hosts
 * (hosts.ts) with their addresses and a bearer `api_key`, and `azure_openai` (azure-openai.ts).
 */
import type { ProviderDefinition } from "../../core/llm/provider.ts";
import { azureOpenAiProvider } from "./azure-openai.ts";
import { bearerKey, openAiCompatibleProviders, watchingTranslator } from "./hosts.ts";
import { definePlugin } from "../../core/plugins/types.ts";

/** The hosted Chat Completions API; any compatible server is set with `inference_url`. */
export const CHAT_COMPLETIONS_DEFAULT_URL = "https://api.openai.com";

export const chatCompletionsProvider: ProviderDefinition = {
  name: "chat_completions",
  defaultUrl: CHAT_COMPLETIONS_DEFAULT_URL,
  // No translation: the body already is in the client's format.
  createTranslator: watchingTranslator,
  authorize: bearerKey,
};

export default definePlugin({
  name: "provider-chat-completions",
  dependsOn: ["providers"],
  setup(api) {
    const providers = api.use("providers");
    for (const provider of [chatCompletionsProvider, ...openAiCompatibleProviders, azureOpenAiProvider]) providers.register(provider);
  },
});
