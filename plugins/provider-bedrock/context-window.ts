/**
 * Whether a Bedrock error says the prompt does not fit the model's context window, so the
 * request can move to a model with a larger one. Bedrock reports it as a 400
 * ValidationException whose message is the model's own wording; these are the wordings seen
 * from the models it serves.
 */
import { isRecord } from "../../core/llm/provider.ts";

const CONTEXT_WINDOW_MESSAGES = [
  /input is too long/i, // "Input is too long for requested model." (Bedrock itself)
  /too many input tokens/i, // "Too many input tokens. Max input tokens: 8192, request input token count: 9279"
  /prompt is too long/i, // "prompt is too long: 209353 tokens > 200000 maximum" (Anthropic models)
  /exceed(s|ed)? (the )?context (limit|window)/i, // "input length and `max_tokens` exceed context limit: ..."
  /maximum context length/i, // "This model's maximum context length is ..." (Llama, Mistral wordings)
  /context window (is )?exceeded|context_window_exceeded/i,
];

/** What the error body says, whichever shape it has: Bedrock's `{message}`, the translated chat error, or text. */
function messageOf(body: unknown): string {
  if (typeof body === "string") return body;
  if (!isRecord(body)) return "";
  if (isRecord(body.error) && typeof body.error.message === "string") return body.error.message;
  if (typeof body.message === "string") return body.message;
  if (typeof body.Message === "string") return body.Message;
  return "";
}

/** The message says the prompt is longer than the model takes (any provider's wording above). */
export function saysContextWindowExceeded(message: string): boolean {
  return CONTEXT_WINDOW_MESSAGES.some((pattern) => pattern.test(message));
}

/**
 * `status` and `body` of a Bedrock answer (raw, or as `translateError` rewrote it): true when
 * the prompt is too long for the model. Throttling and other errors are never this, whatever
 * their message says.
 */
export function isContextWindowError(status: number, body: unknown): boolean {
  if (status !== 400 && status !== 413) return false;
  if (isRecord(body) && isRecord(body.error) && body.error.code === "context_length_exceeded") return true;
  return saysContextWindowExceeded(messageOf(body));
}
