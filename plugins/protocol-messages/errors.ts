/**
 * Errors in the Messages shape, `{"type":"error","error":{"type","message"}}`: the gateway's own
 * error answers on the Messages paths (status and headers kept, so a Messages client raises its
 * typed errors), and the event that ends a broken-off stream. Backend errors are already in that
 * shape (translated, or from a backend that speaks Messages).
 */
import type { GatewayErrorBody } from "../../core/llm/client-protocol.ts";
import type { OutEvent, StreamErrorFields } from "../../core/llm/events.ts";
import type { JsonObject } from "../../core/llm/json.ts";
import { messagesError, messagesErrorEvent, messagesErrorType } from "../../core/llm/messages.ts";
import { inErrorShape } from "../../core/llm/protocol-errors.ts";

/** A gateway error body in the Messages shape; undefined for one already in it. */
export function messagesErrorBody(status: number, body: GatewayErrorBody): JsonObject | undefined {
  if (body.type === "error") return undefined;
  // The gateway's stable code (`model_not_found`) is kept: a client may branch on it in either shape.
  return messagesError(messagesErrorType(status, body.error.type), body.error.message, typeof body.error.code === "string" ? body.error.code : undefined);
}

/** A gateway error response (`{"error":{"message","type","code"}}`) in the Messages shape; anything else unchanged. */
export const asMessagesError = (response: Response): Promise<Response> => inErrorShape(response, messagesErrorBody);

/**
 * The stream's own end for a Messages client: an `error` event its SDKs raise. A refused stream
 * (`error`: an output hook's type and code) carries the Messages type of that refusal and its code.
 */
export const messagesStreamError = (message: string, error?: StreamErrorFields): OutEvent =>
  error ? { event: "error", data: messagesError(messagesErrorType(400, error.type), message, error.code) } : messagesErrorEvent(message);
