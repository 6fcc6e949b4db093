/**
 * Who calls a batch or file endpoint: the pipeline's identify stage (header identity, the auth
 * mode, API keys), as for every other request. A file or batch belongs to its creator's
 * consumer; like a job (docs/design.md#consumers-and-ownership), another consumer's is
 * indistinguishable from a missing one, and a caller without a consumer identity (no consumer
 * header, or identification off) sees them all.
 */
import type { Context } from "hono";
import { errors, GatewayError, toErrorResponse } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { Principal, RequestState } from "../../core/pipeline/context.ts";
import type { PluginApi } from "../../core/plugins/types.ts";

export interface Caller {
  ctx: RequestState;
  principal: Principal;
  /** The index things are created and listed under: the consumer, "" when anonymous. */
  owner: string;
  /** Whether the caller may see something `owner` created. */
  owns(owner: string): boolean;
}

/** The caller, or the identify stage's answer (a 401 for a bad credential, a 400 for a blank identity header). */
export async function identifyCaller(api: PluginApi, request: Request): Promise<Caller | Response> {
  const ctx = api.newContext(request, "sync", "");
  const answer = await api.pipeline.runStage("identify", ctx);
  if (answer) return answer;
  const consumer = ctx.principal.consumer;
  return {
    ctx,
    principal: ctx.principal,
    owner: consumer ?? "",
    owns: (owner) => consumer === undefined || consumer === owner,
  };
}

/** A route handler whose errors become the error body; anything unexpected is a store failing (logged), so 503. */
export function answering(log: Logger, route: string, handler: (c: Context) => Promise<Response>) {
  return async function batchRoute(c: Context): Promise<Response> {
    try {
      return await handler(c);
    } catch (error) {
      if (error instanceof GatewayError) return toErrorResponse(error);
      log.error("batches_request_failed", { route, error });
      return toErrorResponse(errors.storeUnavailable("the batch store is unavailable; try again"));
    }
  };
}

export const json = (body: unknown, status = 200): Response => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** `limit` of a list: a whole number from 1 to `max` (default `fallback`), else a 400 naming it. */
export function listLimit(text: string | undefined, fallback: number, max: number): number {
  if (text === undefined || text === "") return fallback;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > max) {
    throw errors.badRequest(`query parameter "limit" must be a whole number from 1 to ${max}; got "${text.slice(0, 50)}"`);
  }
  return Number(text);
}
