/**
 * What a batch line's run leaves in its batch's files, in the shape of the API that created
 * the batch. OpenAI: the output file holds `{"id","custom_id","response":{"status_code",
 * "request_id","body"},"error":null}` per succeeded request; the error file the failed ones
 * (the answer when there was one, else `"response":null,"error":{"code","message"}`).
 * Anthropic: one results file of `{"custom_id","result":{"type":"succeeded","message"}}`, or
 * `errored`, `canceled`, `expired`.
 */
import { isRecord } from "../../../core/llm/json.ts";
import type { BatchApi } from "./record.ts";

/** Which file a line goes to: "o" the output (results) file, "e" the error file. */
export type FileLetter = "o" | "e";

export interface Answered {
  status: number;
  requestId: string;
  /** The parsed JSON answer, or its text when it was not JSON. */
  body: unknown;
}

/** Why a line has no answer of its own (it never ran, or never got one). */
export interface Unanswered {
  code: "batch_expired" | "batch_cancelled" | "request_failed";
  message: string;
}

export interface LineOutput {
  letter: FileLetter;
  json: string;
}

/** A line's answer: succeeded when 2xx. */
export function answeredLine(api: BatchApi, requestId: string, customId: string, answer: Answered): LineOutput {
  const ok = answer.status >= 200 && answer.status <= 299;
  if (api === "anthropic") {
    const result = ok ? { type: "succeeded", message: answer.body } : { type: "errored", error: messagesError(answer) };
    return { letter: "o", json: JSON.stringify({ custom_id: customId, result }) };
  }
  const line = { id: requestId, custom_id: customId, response: { status_code: answer.status, request_id: answer.requestId, body: answer.body }, error: null };
  return { letter: ok ? "o" : "e", json: JSON.stringify(line) };
}

/** A line that ended without an answer of its own. */
export function unansweredLine(api: BatchApi, requestId: string, customId: string, why: Unanswered): LineOutput {
  if (api === "anthropic") {
    const result = why.code === "batch_expired"
      ? { type: "expired" }
      : why.code === "batch_cancelled"
      ? { type: "canceled" }
      : { type: "errored", error: { type: "error", error: { type: "api_error", message: why.message } } };
    return { letter: "o", json: JSON.stringify({ custom_id: customId, result }) };
  }
  return { letter: "e", json: JSON.stringify({ id: requestId, custom_id: customId, response: null, error: why }) };
}

/** An error answer in the Messages API's error shape (`{"type":"error","error":{type,message}}`). */
function messagesError(answer: Answered): unknown {
  const body = answer.body;
  if (isRecord(body) && body.type === "error" && isRecord(body.error)) return body;
  const inner = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  const message = typeof inner?.message === "string" ? inner.message : typeof body === "string" ? body : `the request failed with status ${answer.status}`;
  const type = typeof inner?.type === "string" ? inner.type : "api_error";
  return { type: "error", error: { type, message } };
}

/** A JSON answer parsed, anything else kept as its text. */
export function parseAnswer(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
