/**
 * Google's error bodies (AI Studio and Vertex AI alike) in the chat-completions shape, the
 * retry delay they carry, and the one that means "the prompt is too long".
 *
 * Google answers `{"error":{"code":429,"message":"...","status":"RESOURCE_EXHAUSTED","details":[...]}}`
 * (a stream request without `alt=sse` wraps it in an array). It becomes
 * `{"error":{"message","type","code"}}` with the HTTP status kept:
 *
 * | HTTP | Google `status`                       | `type`                 | `code`                     |
 * |------|---------------------------------------|------------------------|----------------------------|
 * | 400  | INVALID_ARGUMENT, "input token count" | invalid_request_error  | `context_length_exceeded`  |
 * | 400  | INVALID_ARGUMENT, FAILED_PRECONDITION | invalid_request_error  | the Google status          |
 * | 401  | UNAUTHENTICATED                       | authentication_error   | UNAUTHENTICATED            |
 * | 403  | PERMISSION_DENIED                     | permission_error       | PERMISSION_DENIED          |
 * | 404  | NOT_FOUND                             | not_found_error        | NOT_FOUND                  |
 * | 429  | RESOURCE_EXHAUSTED                    | rate_limit_error       | RESOURCE_EXHAUSTED         |
 * | 5xx  | INTERNAL, UNAVAILABLE, DEADLINE_EXCEEDED | backend_error       | the Google status          |
 *
 * `context_length_exceeded` is the code OpenAI-style clients already look for. Google sends no
 * `Retry-After` header: the wait is a `google.rpc.RetryInfo` detail (`"retryDelay":"32s"`),
 * which `retryAfterOf` turns into the header's value.
 */
import { errorTypeFor, isRecord, type JsonObject } from "../../core/llm/provider.ts";

export interface GoogleError {
  code: number | undefined;
  message: string;
  status: string | undefined;
  details: unknown[];
}

/** The `error` object of a Google error body, or undefined when the body is not one. */
export function googleErrorOf(body: unknown): GoogleError | undefined {
  const outer = Array.isArray(body) && body.length > 0 ? body[0] : body;
  const error = isRecord(outer) && isRecord(outer.error) ? outer.error : undefined;
  if (!error || typeof error.message !== "string") return undefined;
  return {
    code: typeof error.code === "number" ? error.code : undefined,
    message: error.message,
    status: typeof error.status === "string" ? error.status : undefined,
    details: Array.isArray(error.details) ? error.details : [],
  };
}

const RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo";

/** A protobuf Duration as JSON writes it (`"32s"`, `"1.5s"`), or as `{seconds, nanos}`, in ms. */
function durationMs(value: unknown): number | undefined {
  if (typeof value === "string") {
    const match = /^(\d+(?:\.\d+)?)s$/.exec(value.trim());
    return match ? Number(match[1]) * 1000 : undefined;
  }
  if (isRecord(value)) {
    const seconds = Number(value.seconds ?? 0);
    const nanos = Number(value.nanos ?? 0);
    return Number.isFinite(seconds) && Number.isFinite(nanos) ? seconds * 1000 + nanos / 1e6 : undefined;
  }
  return undefined;
}

/** The wait a Google error asks for (its RetryInfo `retryDelay`), in ms; undefined when it names none. */
export function retryDelayMs(body: unknown): number | undefined {
  const error = googleErrorOf(body);
  const info = error?.details.find((detail) => isRecord(detail) && detail["@type"] === RETRY_INFO);
  return isRecord(info) ? durationMs(info.retryDelay) : undefined;
}

/** The same wait as a `Retry-After` header value (whole seconds, rounded up); undefined when none. */
export function retryAfterOf(body: unknown): string | undefined {
  const ms = retryDelayMs(body);
  return ms === undefined ? undefined : String(Math.ceil(ms / 1000));
}

/**
 * The wordings Google uses for a prompt over the model's context window: the Gemini API's "The
 * input token count (N) exceeds the maximum number of tokens allowed (M)." and Vertex AI's
 * "Unable to submit request because the input token count is N but model only supports up to M."
 */
const TOO_LONG = /input token count.*(exceeds the maximum number of tokens|but model only supports up to)/i;

/** Anthropic's wording, for its models on Vertex AI: "prompt is too long: N tokens > M maximum". */
const PROMPT_TOO_LONG = /^prompt is too long/i;

/**
 * Whether a backend answer says the prompt is longer than the model's context window: Google's
 * 400 INVALID_ARGUMENT with one of the wordings above, or (an Anthropic model on Vertex AI) the
 * Messages API's 400 `invalid_request_error` "prompt is too long".
 */
export function isContextWindowError(status: number, body: unknown): boolean {
  if (status !== 400) return false;
  const error = googleErrorOf(body);
  if (!error) return false;
  const anthropic = isRecord(body) && body.type === "error";
  return anthropic ? PROMPT_TOO_LONG.test(error.message) : TOO_LONG.test(error.message);
}

/** A non-2xx Google answer as a chat-completions error body (see the table at the top). */
export function googleToChatError(status: number, body: unknown): JsonObject {
  const error = googleErrorOf(body);
  if (!error) {
    const text = typeof body === "string" && body.trim() !== "" ? body.trim() : `the backend answered HTTP ${status}`;
    return { error: { message: text, type: errorTypeFor(status), code: null } };
  }
  const code = isContextWindowError(status, body) ? "context_length_exceeded" : (error.status ?? null);
  return { error: { message: error.message, type: errorTypeFor(status), code } };
}
