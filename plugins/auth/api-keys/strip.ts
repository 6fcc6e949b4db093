/**
 * Before the switch to `auth.mode: api_key` (a key secret set, another mode), clients may
 * already send their gateway key. It is not checked then, but it must not reach a backend
 * either: `Authorization` and `x-api-key` are removed when they carry a gateway key.
 */
import type { StageStep } from "../../../core/pipeline/pipeline.ts";
import { isWellFormedKey } from "./secret.ts";

export const stripGatewayKeys: StageStep = function keepGatewayKeysFromBackends(ctx) {
  const headers = ctx.request.headers;
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(headers.get("authorization") ?? "")?.[1];
  const removed: Record<string, null> = {};
  if (bearer !== undefined && isWellFormedKey(bearer)) removed.authorization = null;
  if (isWellFormedKey(headers.get("x-api-key")?.trim() ?? "")) removed["x-api-key"] = null;
  if (Object.keys(removed).length > 0) ctx.backendHeaders = { ...ctx.backendHeaders, ...removed };
};
