/**
 * The JSON body of an admin endpoint (`/-/*`): only as `Content-Type: application/json`, within
 * the admin endpoints' byte bound. A page on another site can make a browser send a body
 * without asking the gateway first only as `text/plain`, a URL-encoded form or multipart;
 * refusing those types (415) keeps such a body from ever reaching an admin route as JSON.
 */
import { errors } from "../errors.ts";
import { readJsonBody } from "./json-body.ts";
import { ADMIN_BODY_LIMIT } from "./read-bytes.ts";

/** `application/json`, with any parameters (`; charset=utf-8`), in any letter case. */
export function isApplicationJson(contentType: string | null): boolean {
  return (contentType ?? "").split(";")[0].trim().toLowerCase() === "application/json";
}

/**
 * The admin request's body parsed as JSON; a GatewayError otherwise: 415 for another content
 * type, then 413 and 400 as `readJsonBody` answers them. `expected` names what the route wants
 * (`a JSON body {"model": ...}`), for the messages.
 */
export async function readAdminJson(request: Request, expected: string): Promise<unknown> {
  const contentType = request.headers.get("content-type");
  if (!isApplicationJson(contentType)) {
    const got = contentType === null ? "no Content-Type" : `Content-Type: ${JSON.stringify(contentType.slice(0, 100))}`;
    throw errors.unsupportedMediaType(
      `admin endpoints take JSON only as Content-Type: application/json (got ${got}); send ${expected} with that header (curl: -H 'content-type: application/json')`,
    );
  }
  return (await readJsonBody(request, { limit: ADMIN_BODY_LIMIT, expected })).value;
}
