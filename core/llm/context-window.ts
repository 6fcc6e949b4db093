/**
 * Whether an error answer says the prompt does not fit the model's context window, so the
 * request can move to a model with a larger one (`context_window_fallbacks`). Providers word it
 * differently; these are the wordings of the APIs and models the gateway speaks to, and a
 * provider with its own adds them through `ProviderDefinition.isContextWindowError`.
 */
import { isRecord } from "./json.ts";

const CONTEXT_WINDOW_MESSAGES = [
  /input is too long/i, // "Input is too long for requested model." (Bedrock)
  /too many input tokens/i, // "Too many input tokens. Max input tokens: 8192, request input token count: 9279"
  /prompt is too long/i, // "prompt is too long: 209353 tokens > 200000 maximum" (Anthropic)
  /exceed(s|ed)? (the )?context (limit|window)/i, // "input length and `max_tokens` exceed context limit: ..."
  /maximum context length/i, // "This model's maximum context length is ..." (OpenAI, vLLM, Llama and Mistral wordings)
  /context window (is )?exceeded|context_window_exceeded/i,
  /input token count.*(exceeds the maximum number of tokens|but model only supports up to)/i, // Gemini API, Vertex AI
];

/** What an error body says, whichever shape it has: `{"error":{"message"}}`, `{message}`, `{Message}`, or text. */
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
 * True when an error answer (`status`, its body parsed when JSON) says the prompt is too long:
 * a 400 or 413 with OpenAI's code `context_length_exceeded` or one of the wordings above.
 * Throttling and server errors never are, whatever their message says.
 */
export function isContextWindowError(status: number, body: unknown): boolean {
  if (status !== 400 && status !== 413) return false;
  if (isRecord(body) && isRecord(body.error) && body.error.code === "context_length_exceeded") return true;
  return saysContextWindowExceeded(messageOf(body));
}
