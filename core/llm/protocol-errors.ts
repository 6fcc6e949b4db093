/**
 * The gateway's own error answers on a client protocol's paths (unknown model 404, limits 429,
 * a bad body 400, no backend 502...) rewritten into that protocol's error shape
 * (`ClientProtocol.errorBody`), the status and headers kept, so its clients raise their typed
 * errors. A protocol plugin installs the middleware where some service lists one of its paths.
 */
import type { MiddlewareHandler } from "hono";
import type { ServiceConfig } from "../config/schema.ts";
import type { ClientProtocol, GatewayErrorBody } from "./client-protocol.ts";
import { isRecord, parseJson } from "./json.ts";

type ErrorBody = NonNullable<ClientProtocol["errorBody"]>;

function isGatewayError(body: unknown): body is GatewayErrorBody {
  return isRecord(body) && isRecord(body.error) && typeof body.error.message === "string";
}

/** A gateway error response (`{"error":{"message","type"}}`) as `errorBody` writes it; anything else unchanged. */
export async function inErrorShape(response: Response, errorBody: ErrorBody): Promise<Response> {
  if (response.status < 400 || !(response.headers.get("content-type") ?? "").includes("application/json")) return response;
  const body = parseJson(await response.clone().text());
  if (!isGatewayError(body)) return response;
  const out = errorBody(response.status, body);
  if (out === undefined) return response;
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  return new Response(JSON.stringify(out), { status: response.status, statusText: response.statusText, headers });
}

/** The middleware that rewrites the error answers on `protocol`'s paths (a protocol without `errorBody` needs none). */
export function protocolErrors(protocol: ClientProtocol & { errorBody: ErrorBody }): MiddlewareHandler {
  const { paths } = protocol;
  const errorBody: ErrorBody = (status, body) => protocol.errorBody(status, body);
  return async function clientProtocolErrors(c, next) {
    await next();
    // The status first: most answers are not errors, and those need no URL parse.
    if (c.res.status < 400 || !paths.includes(new URL(c.req.url).pathname)) return;
    const converted = await inErrorShape(c.res, errorBody);
    if (converted === c.res) return;
    // Cleared first: Hono copies the old response's headers onto a new one, and the old
    // Content-Length would not fit the new body (`converted` already has the other headers).
    c.res = undefined;
    c.res = converted;
  };
}

/** Whether some service lists one of `paths` among its operations (then the protocol's error middleware is worth its cost). */
export function listsAnyPath(services: readonly ServiceConfig[], paths: readonly string[]): boolean {
  return services.some((service) => Object.values(service.operations).some((list) => list.some((path) => paths.includes(path))));
}
