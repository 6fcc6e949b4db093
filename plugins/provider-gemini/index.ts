/**
 * `provider: gemini` (Google AI Studio, the Gemini API) and `provider: vertex_ai` (Google Cloud
 * Vertex AI: Gemini models, and Anthropic's models through the Messages API). Clients keep
 * speaking chat completions; requests, responses, streams and errors are translated both ways
 * (the tables are in the files named by the protocol pair).
 *
 * Not registered yet: these backends take the model and the streaming choice in the URL
 * (urls.ts) and Vertex AI an OAuth token fetched when it expires (google-access-tokens.ts),
 * which a provider cannot express until the LLM proxy asks it for a URL per backend model and
 * for headers per request. The functions it will call are exported here (google-backends.ts);
 * registering the two definitions below is then the whole plugin.
 */
import type { ProviderDefinition } from "../../core/llm/provider.ts";
import { geminiTranslator } from "./gemini-translator.ts";
import { GEMINI_API_URL } from "./urls.ts";
import { vertexTranslator } from "./vertex-translator.ts";

export const geminiProvider: ProviderDefinition = {
  name: "gemini",
  defaultUrl: GEMINI_API_URL,
  streamFormat: "sse",
  createTranslator: geminiTranslator,
};

/** `provider: vertex_ai`; Anthropic's models on it are translated by `messagesProvider` (the registered `messages_api`). */
export const createVertexAiProvider = (messagesProvider: ProviderDefinition): ProviderDefinition => ({
  name: "vertex_ai",
  // The address depends on the backend's location (urls.ts `vertexBaseUrl`).
  defaultUrl: "",
  streamFormat: "sse",
  createTranslator: (context) => vertexTranslator(context, messagesProvider),
});

export { GEMINI_API_URL, geminiRequestUrl, VERTEX_GLOBAL_URL, vertexBaseUrl, vertexPublisherOf, vertexRequestUrl } from "./urls.ts";
export {
  type BackendAuth,
  geminiBackendAuth,
  geminiBackendUrl,
  GOOGLE_API_KEY_HEADER,
  type GoogleBackendSettings,
  vertexBackendAuth,
  vertexBackendUrl,
} from "./google-backends.ts";
export { CLOUD_PLATFORM_SCOPE, GoogleAccessTokens, type GoogleTokenOptions, REFRESH_MARGIN_MS } from "./google-access-tokens.ts";
export { googleToChatError, isContextWindowError, retryAfterOf, retryDelayMs } from "./google-errors.ts";
export { PROMPT_BLOCKED_STATUS, PromptBlockedError } from "./prompt-block.ts";
export { toVertexAnthropicBody, VERTEX_ANTHROPIC_VERSION } from "./vertex-anthropic.ts";
