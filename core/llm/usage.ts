/**
 * Token usage as the chat-completions format reports it, and the `llm.usage` event the LLM
 * proxy emits after a counted response (the limits and usage plugins subscribe to it).
 */
import type { RequestOrigin } from "../pipeline/context.ts";
import type { BudgetHold } from "../limits/budget-hold.ts";
import type { CredentialLimits } from "../limits/windows.ts";
import { isRecord } from "./json.ts";

/** Tokens one response consumed. Unknown usage is `undefined`, never zeros. */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Of `prompt_tokens`, read from the provider's prompt cache; absent when the backend did not say. */
  cached_tokens?: number;
  /** Of `prompt_tokens`, written to the provider's prompt cache (Messages-style backends); absent when not said. */
  cache_creation_tokens?: number;
}

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0;

/**
 * The top-level `usage {prompt_tokens, completion_tokens}` of a chat-completions body, or
 * `undefined` when it is absent or malformed (docs/design.md#usage-requirement). An embeddings
 * answer reports `prompt_tokens` alone (it generates nothing): that counts as zero completion
 * tokens, so embeddings are counted too; a `completion_tokens` that is there but not a count
 * still makes the usage malformed.
 */
export function usageOf(body: unknown): TokenUsage | undefined {
  if (!isRecord(body) || !isRecord(body.usage)) return undefined;
  const { prompt_tokens, completion_tokens = 0, prompt_tokens_details } = body.usage;
  if (!isCount(prompt_tokens) || !isCount(completion_tokens)) return undefined;
  // OpenAI-style answers count cache reads inside prompt_tokens and say how many in the details.
  const cached = isRecord(prompt_tokens_details) && isCount(prompt_tokens_details.cached_tokens) ? prompt_tokens_details.cached_tokens : undefined;
  return cached === undefined ? { prompt_tokens, completion_tokens } : { prompt_tokens, completion_tokens, cached_tokens: cached };
}

/** Usage from a backend's two counts, or `undefined` when either is unknown (never a made-up 0). */
export function usageFromCounts(prompt: unknown, completion: unknown): TokenUsage | undefined {
  if (!isCount(prompt) || !isCount(completion)) return undefined;
  return { prompt_tokens: prompt, completion_tokens: completion };
}

/** Payload of `llm.usage`. */
export interface LlmUsageEvent {
  serviceType: string;
  /** The client-facing model alias. */
  model: string;
  /** The consumer (`server.consumer_header` or the auth mode); "" when anonymous. */
  consumer: string;
  userType: string;
  prompt: number;
  completion: number;
  /** The model sent to the backend that answered (prices may be set per backend model). */
  backendModel?: string;
  /** Of `prompt`, read from and written to the provider's prompt cache (0 when not said). */
  cached?: number;
  cacheCreation?: number;
  /** What the response cost in `pricing.currency`; absent when no price applies (unpriced or no pricing). */
  cost?: number;
  /**
   * Whether token budgets count this response (docs/design.md#token-budget). False when the request
   * carried `Cache-Control: no-cache`; token metrics count it either way. Streaming responses
   * (unless `llm.count_streamed_tokens`), cache hits and responses without usage emit no event at
   * all.
   */
  counted: boolean;
  /** The caller's credential limits (an API key's), whose token and cost windows count this response too. */
  credential?: CredentialLimits;
  /** The id of the API key the request came with (usage reports by key). */
  keyId?: string;
  /** What the request held of its budgets since it was admitted, for this count to replace. */
  hold?: BudgetHold;
  /** Who sent the request: a client, or the gateway for a batch line (usage reports tell the two apart). Default client. */
  origin?: RequestOrigin;
}

/** Whether budgets count a request's answer: not when it asks `Cache-Control: no-cache`. */
export const countedRequest = (headers: Headers): boolean => !/no-cache/i.test(headers.get("cache-control") ?? "");

declare module "../plugins/types.ts" {
  interface GatewayEvents {
    /**
     * An LLM response with usage was written (docs/design.md#token-budget): a non-streaming one
     * after the response, a stream (with `llm.count_streamed_tokens`) as it ends, before its last
     * byte.
     */
    "llm.usage": LlmUsageEvent;
  }
}
