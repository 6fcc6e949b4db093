/**
 * The usage endpoints (docs/design.md#usage-endpoints): `GET /usage` for the calling consumer, and
 * the admin endpoints `GET /-/usage` (2.5) and `GET /-/usage/report` (2.6). All three answer 501
 * when `server.consumer_header` is not configured: without it nothing is recorded.
 */
import type { Context } from "hono";
import { errors, GatewayError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import { pageParams } from "../../core/pagination.ts";
import { RequestState } from "../../core/pipeline/context.ts";
import { callerAuthOf } from "../../core/pipeline/caller-auth.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import type { UsageRecords } from "./records.ts";
import { parseReportQuery, usageReport } from "./report.ts";

/** docs/design.md#constants: usage list page size. */
export const DEFAULT_PAGE = 20;
export const MAX_PAGE = 100;

const json = (value: unknown): Response => new Response(JSON.stringify(value), { headers: { "content-type": "application/json" } });

/** Errors as the error body; a store failure is a 503 that says so, never a bare 500. */
function answering(log: Logger, endpoint: string, handler: (c: Context) => Promise<Response>) {
  return async function usageEndpoint(c: Context): Promise<Response> {
    try {
      return await handler(c);
    } catch (error) {
      if (error instanceof GatewayError) return error.toResponse();
      log.error("usage_read_failed", { endpoint, error });
      return errors.storeUnavailable("usage data cannot be read right now: the key-value store failed; retry later").toResponse();
    }
  };
}

const optional = (value: string | undefined) => (value === undefined || value === "" ? undefined : value);

export function registerUsageRoutes(api: PluginApi, records: UsageRecords): void {
  const header = api.config.server.consumer_header;
  const requireHeader = (path: string) => {
    if (header === "") {
      throw errors.notImplemented(`${path} needs consumer identification, and no usage is recorded without it: set server.consumer_header`);
    }
  };

  api.routes.get(
    "/usage",
    answering(api.log, "usage", async (c) => {
      requireHeader("GET /usage");
      // The caller's identity as every request gets it (headers, or a verified token with an
      // auth mode); not registered as a mode request, so it counts as an admin request.
      const ctx = new RequestState(c.req.raw, "sync", "", api.clock.now());
      const answer = await api.pipeline.runStage("identify", ctx);
      if (answer) return answer;
      const consumer = ctx.principal.consumer;
      if (consumer === undefined) {
        const advice = `send the ${header} header naming the consumer whose usage to show`;
        throw errors.badRequest(callerAuthOf(api)?.missingConsumerMessage(advice) ?? advice);
      }
      return json(await records.one(consumer));
    }),
  );

  api.routes.get(
    "/-/usage",
    answering(api.log, "usage_list", async (c) => {
      requireHeader("GET /-/usage");
      const { limit, offset } = pageParams((name) => c.req.query(name), { defaultLimit: DEFAULT_PAGE, maxLimit: MAX_PAGE });
      const type = optional(c.req.query("type"));
      const consumer = optional(c.req.query("consumer"));
      if (consumer !== undefined) {
        // docs/design.md#usage-list: `total` is 1 when a consumer is named.
        const consumers = offset === 0 ? [await records.one(consumer, type)] : [];
        return json({ total: 1, limit, offset, consumers });
      }
      return json(await records.page(type, limit, offset));
    }),
  );

  api.routes.get(
    "/-/usage/report",
    answering(api.log, "usage_report", async (c) => {
      requireHeader("GET /-/usage/report");
      const query = parseReportQuery((name) => c.req.query(name));
      return json(await usageReport(api.kv, api.config.services, query, api.has("pricing")));
    }),
  );
}
