/**
 * What an LLM request may use, guessed before it is sent, so budgets can hold that much while
 * it runs (the limits plugin's reservations). The guess is meant to be at least what the
 * answer reports when the request bounds its output:
 *
 * - prompt: the request body's size in bytes / BYTES_PER_TOKEN, rounded up. Text runs about
 *   four bytes a token in English, and the body's JSON syntax and field names count too, so
 *   this is usually more than the prompt; inline images or audio make it far more.
 * - completion: `max_completion_tokens`, `max_tokens` or `max_output_tokens` (the largest one
 *   set), times `n` when it asks for several choices; DEFAULT_OUTPUT_TOKENS when none is set;
 *   none for embeddings (they generate nothing).
 */
import type { TokenUsage } from "./usage.ts";

export const BYTES_PER_TOKEN = 4;
/** The completion guessed for a request that sets no output bound. */
export const DEFAULT_OUTPUT_TOKENS = 1024;

const OUTPUT_BOUNDS = ["max_completion_tokens", "max_tokens", "max_output_tokens"] as const;

const positiveInteger = (value: unknown): number | undefined => (typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined);

/** The usage guessed for a request to `path` with this JSON body of `bytes` bytes. */
export function estimateUsage(body: Readonly<Record<string, unknown>>, bytes: number, path: string): TokenUsage {
  const prompt = Math.ceil(bytes / BYTES_PER_TOKEN);
  if (path.endsWith("/embeddings")) return { prompt_tokens: prompt, completion_tokens: 0 };
  let bound: number | undefined;
  for (const field of OUTPUT_BOUNDS) {
    const value = positiveInteger(body[field]);
    if (value !== undefined && (bound === undefined || value > bound)) bound = value;
  }
  const choices = positiveInteger(body.n) ?? 1;
  return { prompt_tokens: prompt, completion_tokens: (bound ?? DEFAULT_OUTPUT_TOKENS) * choices };
}
