/**
 * The Chat Completions API under the names people type: `openai` and the OpenAI-compatible hosts,
 * each with its default base address (a backend of these may leave out `url`) and its key,
 * `backends[].api_key`, sent as `Authorization: Bearer`. Nothing is translated: they are
 * `chat_completions` with an address and a key.
 */
import { type BackendCall, ChatStreamWatch, type OutgoingRequest, type ProviderDefinition, withCredentials } from "../../core/llm/provider.ts";

/** Provider name -> the base address the request path (`/v1/chat/completions`, ...) is appended to. */
export const OPENAI_COMPATIBLE_HOSTS: Readonly<Record<string, string>> = {
  openai: "https://api.openai.com",
  groq: "https://api.groq.com/openai",
  mistral: "https://api.mistral.ai",
  together: "https://api.together.xyz",
  deepseek: "https://api.deepseek.com",
  openrouter: "https://openrouter.ai/api",
  fireworks: "https://api.fireworks.ai/inference",
  // Self-hosted: the address each server listens on by default.
  ollama: "http://localhost:11434",
  vllm: "http://localhost:8000",
};

/** No translation: streams are only watched, for their end (`[DONE]` or a `finish_reason`) and the usage of their last chunk. */
export function watchingTranslator() {
  const watch = new ChatStreamWatch();
  return { observeStreamEvent: watch.event.bind(watch), observedEventsMayMatter: ChatStreamWatch.mayMatter, streamProgress: () => watch.progress() };
}

/**
 * The request's headers with the backend's `api_key` as a bearer token instead of any credential
 * the client sent (none set: as they are, so `headers` may carry one).
 */
export function bearerKey(request: OutgoingRequest, call: BackendCall): Readonly<Record<string, string>> {
  const key = call.backend.api_key;
  // No key: the headers as they are (a copy of them cost ~3 µs a request, for nothing).
  return key === "" ? request.headers : withCredentials(request.headers, { authorization: `Bearer ${key}` });
}

export function openAiCompatible(name: string, defaultUrl: string): ProviderDefinition {
  return {
    name,
    defaultUrl,
    createTranslator: watchingTranslator,
    authorize: bearerKey,
    // OpenAI's own API also takes the Responses API as it is (the gateway still keeps its copy of each stored answer).
    ...(name === "openai" ? { speaks: ["responses"] } : {}),
  };
}

export const openAiCompatibleProviders: readonly ProviderDefinition[] = Object.entries(OPENAI_COMPATIBLE_HOSTS).map(([name, url]) =>
  openAiCompatible(name, url)
);
