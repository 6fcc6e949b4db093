/**
 * The gateway's own errors on the inbound Messages routes (unknown model 404, limits 429, a bad
 * body 400, no backend 502...) in the Messages error shape, `{"type":"error","error":{"type",
 * "message"}}`, the status and headers kept, so a Messages client raises its typed errors.
 * Backend errors are already in that shape (translated, or from a backend that speaks Messages).
 */
import type { MiddlewareHandler } from "hono";
import { isRecord, parseJson } from "../../core/llm/json.ts";
import { messagesError, messagesErrorType } from "../../core/llm/messages.ts";
import { messagesRoute } from "./messages-inbound.ts";

/** A gateway error response (`{"error":{"message","type","code"?}}`) in the Messages shape; anything else unchanged. */
export async function asMessagesError(response: Response): Promise<Response> {
  if (response.status < 400 || !(response.headers.get("content-type") ?? "").includes("application/json")) return response;
  const text = await response.clone().text();
  const body = parseJson(text);
  if (!isRecord(body) || body.type === "error" || !isRecord(body.error) || typeof body.error.message !== "string") return response;
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  // The gateway's stable code (`model_not_found`) is kept: a client may branch on it in either shape.
  const code = typeof body.error.code === "string" ? body.error.code : undefined;
  const out = messagesError(messagesErrorType(response.status, body.error.type), body.error.message, code);
  return new Response(JSON.stringify(out), { status: response.status, statusText: response.statusText, headers });
}

export const messagesErrors: MiddlewareHandler = async function messagesErrors(c, next) {
  await next();
  // The status first: most answers are not errors, and those need no URL parse.
  if (c.res.status < 400 || !messagesRoute(new URL(c.req.url).pathname)) return;
  const converted = await asMessagesError(c.res);
  if (converted === c.res) return;
  // Cleared first: Hono copies the old response's headers onto a new one, and the old
  // Content-Length would not fit the new body (`converted` already has the other headers).
  c.res = undefined;
  c.res = converted;
};
