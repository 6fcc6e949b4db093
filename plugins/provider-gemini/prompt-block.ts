/**
 * A prompt Gemini refuses to answer comes back as a success (HTTP 200, or the first event of
 * a stream) with `promptFeedback.blockReason` (SAFETY, BLOCKLIST, PROHIBITED_CONTENT,
 * IMAGE_SAFETY, MODEL_ARMOR, JAILBREAK, OTHER) and no candidates. For the client it is an
 * error: status 400, `{"error":{"message","type":"invalid_request_error","code":"content_filter"}}`,
 * what OpenAI-style APIs answer for a prompt their filter refused. (A candidate whose *answer*
 * was filtered is not an error: it ends with `finish_reason: "content_filter"`.)
 */
import { ErrorAnswer, isRecord, type JsonObject } from "../../core/llm/provider.ts";

export const PROMPT_BLOCKED_STATUS = 400;

export interface PromptBlock {
  reason: string;
  /** Vertex AI says why in words (`blockReasonMessage`); the Gemini API does not. */
  detail: string | undefined;
}

/** The block of an answer with no candidates, or undefined when the answer was not blocked. */
export function promptBlockOf(body: unknown): PromptBlock | undefined {
  if (!isRecord(body) || (Array.isArray(body.candidates) && body.candidates.length > 0)) return undefined;
  const feedback = isRecord(body.promptFeedback) ? body.promptFeedback : undefined;
  if (typeof feedback?.blockReason !== "string") return undefined;
  return { reason: feedback.blockReason, detail: typeof feedback.blockReasonMessage === "string" ? feedback.blockReasonMessage : undefined };
}

/** The chat-completions error body for a blocked prompt. */
export function promptBlockedError(block: PromptBlock): JsonObject {
  const why = block.detail !== undefined ? `: ${block.detail}` : "";
  return {
    error: {
      message: `the backend's safety filters blocked the prompt (blockReason ${block.reason}${why}); change the prompt and send it again`,
      type: "invalid_request_error",
      code: "content_filter",
    },
  };
}

/**
 * Thrown by the response translation for a blocked prompt: the client gets its status and
 * body (the proxy answers an `ErrorAnswer` in the client's protocol).
 */
export class PromptBlockedError extends ErrorAnswer {
  override name = "PromptBlockedError";

  constructor(block: PromptBlock) {
    super(PROMPT_BLOCKED_STATUS, promptBlockedError(block) as ConstructorParameters<typeof ErrorAnswer>[1]);
  }
}
