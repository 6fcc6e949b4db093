/**
 * `provider: gemini` (Google AI Studio, the Gemini API) and `provider: vertex_ai` (Google Cloud
 * Vertex AI: Gemini models, and Anthropic's models through the Messages API). Clients keep
 * speaking chat completions; requests, responses, streams and errors are translated both ways
 * (the tables are in the files named by the protocol pair).
 *
 * These backends take the model and the streaming choice in the URL (urls.ts, `requestUrl`);
 * a Gemini API backend its `api_key`, a Vertex AI one an OAuth token fetched again before it
 * expires (google-access-tokens.ts, `authorize`, one token cache per backend).
 */
import type { Clock } from "../../core/clock.ts";
import { type BackendSettings, type ProviderDefinition, withCredentials } from "../../core/llm/provider.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { geminiTranslator } from "./gemini-translator.ts";
import { type BackendAuth, geminiBackendAuth, geminiBackendUrl, type GoogleBackendSettings, vertexBackendAuth, vertexBackendUrl } from "./google-backends.ts";
import { isContextWindowError, retryAfterOf } from "./google-errors.ts";
import { GEMINI_API_URL, vertexBaseUrl } from "./urls.ts";
import { vertexTranslator } from "./vertex-translator.ts";

/** The settings as google-backends.ts reads them. */
function googleSettings(backend: BackendSettings): GoogleBackendSettings {
  return {
    url: backend.url,
    api_key: backend.api_key,
    project: backend.project,
    location: backend.location,
    credentials_file: backend.credentials_file,
  };
}

/** A problem of `make` (it throws saying what to set) as a config problem, else none. */
function problemOf(make: () => unknown): string[] {
  try {
    make();
    return [];
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
}

/** What both providers share: the protocol, errors with their wait, too-long prompts. */
const googleProtocol = {
  streamFormat: "sse",
  isContextWindowError,
  retryAfter: (_status: number, body: unknown) => retryAfterOf(body),
} as const;

export const geminiProvider: ProviderDefinition = {
  name: "gemini",
  defaultUrl: GEMINI_API_URL,
  ...googleProtocol,
  createTranslator: geminiTranslator,
  requestUrl: (call) => geminiBackendUrl(googleSettings(call.backend), call.model, call.stream),
  authorize: async (request, call) => withCredentials(request.headers, await geminiBackendAuth(googleSettings(call.backend)).headers()),
  backendProblems: (backend) => problemOf(() => geminiBackendAuth(googleSettings(backend))).map((p) => `api_key: ${p}`),
};

/**
 * `provider: vertex_ai`; Anthropic's models on it are translated by `messagesProvider` (the
 * registered `messages_api`). `deps` fetch the OAuth tokens (one cache per backend entry).
 */
export function createVertexAiProvider(messagesProvider: ProviderDefinition, deps: { clock: Clock; fetch?: typeof fetch }): ProviderDefinition {
  const auths = new WeakMap<BackendSettings, BackendAuth>();
  const authOf = (backend: BackendSettings) => {
    let auth = auths.get(backend);
    if (!auth) {
      auth = vertexBackendAuth(googleSettings(backend), deps);
      auths.set(backend, auth);
    }
    return auth;
  };
  return {
    name: "vertex_ai",
    // The address depends on the backend's location (urls.ts `vertexBaseUrl`).
    defaultUrl: "",
    ...googleProtocol,
    createTranslator: (context) => vertexTranslator(context, messagesProvider),
    requestUrl: (call) => vertexBackendUrl(googleSettings(call.backend), call.model, call.stream),
    authorize: async (request, call) => withCredentials(request.headers, await authOf(call.backend).headers()),
    backendProblems: (backend) => [
      ...problemOf(() => vertexBackendAuth(googleSettings(backend), deps)).map((p) => `project: ${p}`),
      ...(backend.model === "" ? ["model: required: the Vertex AI model (gemini-2.5-flash, claude-sonnet-4@20250514, ...)"] : []),
    ],
    backendAddress: (
      backend,
    ) => (backend.location !== "" ? problemOf(() => vertexBaseUrl(backend.location)).length === 0 ? vertexBaseUrl(backend.location) : "" : ""),
  };
}

export default definePlugin({
  name: "provider-gemini",
  dependsOn: ["providers", "provider-messages-api"],
  setup(api) {
    const providers = api.use("providers");
    const messagesProvider = providers.get("messages_api");
    if (!messagesProvider) throw new Error("provider-gemini needs the messages_api provider (Anthropic's models on Vertex AI)");
    providers.register(geminiProvider);
    providers.register(createVertexAiProvider(messagesProvider, { clock: api.clock, fetch: api.fetch }));
  },
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
