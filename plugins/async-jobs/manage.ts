/**
 * Reading and managing jobs: `GET /jobs/{type}/{id}` (docs/design.md#reading-a-job), `DELETE`
 * (docs/design.md#cancelling-a-job), `GET /jobs` (docs/design.md#listing-jobs) and `POST
 * /-/jobs/purge` (docs/design.md#operations-endpoints).
 */
import type { Context } from "hono";
import { errors, GatewayError, toErrorResponse } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import { isRecord } from "../../core/llm/json.ts";
import { pageParams } from "../../core/pagination.ts";
import { callerAuthOf } from "../../core/pipeline/caller-auth.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import { readAdminJson } from "../../core/request-body/admin-json.ts";
import { expiredResponse, findJob, identify } from "./access.ts";
import { isJobStatus, toView } from "./record.ts";
import type { KvJobStore } from "./store.ts";

/** The longest model name a purge takes: aliases are short, and the name becomes part of store keys and log lines. */
export const PURGE_MODEL_MAX_CHARS = 256;

const json = (body: unknown, status = 200): Response => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** Errors become the error body; anything unexpected here is a store failing (logged), so 503. */
export function answering(log: Logger, name: string, handler: (c: Context) => Promise<Response>) {
  return async (c: Context): Promise<Response> => {
    try {
      return await handler(c);
    } catch (error) {
      if (error instanceof GatewayError) return toErrorResponse(error);
      log.error("jobs_request_failed", { route: name, error });
      return toErrorResponse(errors.storeUnavailable("the job store is unavailable; try again"));
    }
  };
}

const PAGE_DEFAULT = 20;
const PAGE_MAX = 100;

export function registerManageRoutes(api: PluginApi, store: KvJobStore): void {
  const { log, config } = api;

  api.routes.get(
    "/jobs/:type/:id",
    answering(log, "get", async (c) => {
      const access = await findJob(api, store, c);
      if (access.kind === "answer") return access.response;
      const job = access.job;
      if (job.status !== "completed") return json(toView(job));
      const result = await store.readResult(job);
      if (result === undefined) throw errors.internal(`the result of job "${job.id}" is missing from the object store`);
      if (!store.persistsResult && !(await store.consume(job))) {
        // Another reader consumed it a moment ago.
        return expiredResponse();
      }
      return json(toView(job, result));
    }),
  );

  api.routes.delete(
    "/jobs/:type/:id",
    answering(log, "delete", async (c) => {
      const access = await findJob(api, store, c);
      if (access.kind === "answer") return access.response;
      const outcome = await store.cancel(access.job);
      if (!outcome) return expiredResponse();
      if (outcome.job) api.emit("job.terminal", { job: outcome.job });
      return json({ job_id: access.job.id, status: outcome.status }, 202);
    }),
  );

  api.routes.get(
    "/jobs",
    answering(log, "list", async (c) => {
      const header = config.server.consumer_header;
      if (header === "") {
        throw errors.badRequest("GET /jobs lists the caller's jobs and needs consumer identification: set server.consumer_header");
      }
      const { ctx, answer } = await identify(api, c, c.req.query("service_type") ?? "");
      if (answer) return answer;
      const consumer = ctx.principal.consumer;
      if (consumer === undefined) {
        const advice = `send the ${header} header to list your jobs`;
        throw errors.badRequest(callerAuthOf(api)?.missingConsumerMessage(advice) ?? advice);
      }
      const status = c.req.query("status");
      if (status !== undefined && status !== "" && !isJobStatus(status)) {
        throw errors.badRequest(`unknown status "${status}"; use one of pending, processing, completed, failed, cancelled`);
      }
      const serviceType = c.req.query("service_type");
      const { limit, offset } = pageParams((name) => c.req.query(name), { defaultLimit: PAGE_DEFAULT, maxLimit: PAGE_MAX });
      const page = await store.list({
        consumer,
        serviceType: serviceType === "" ? undefined : serviceType,
        status: status === "" || status === undefined ? undefined : status,
        limit,
        offset,
      });
      return json({ total: page.total, limit, offset, jobs: page.jobs.map((job) => toView(job)) });
    }),
  );

  api.routes.post(
    "/-/jobs/purge",
    answering(log, "purge", async (c) => {
      const value = await readAdminJson(c.req.raw, 'a JSON body {"model": "<model alias>"}');
      const model = isRecord(value) ? value.model : undefined;
      if (typeof model !== "string" || model.trim() === "") throw errors.badRequest('the body needs "model": the model whose jobs to delete');
      if (model.length > PURGE_MODEL_MAX_CHARS) {
        throw errors.badRequest(`"model": at most ${PURGE_MODEL_MAX_CHARS} characters (got ${model.length}); name the model alias whose jobs to delete`);
      }
      const deleted = await store.purge(model);
      log.info("jobs_purged", { model, deleted });
      return json({ model, deleted });
    }),
  );
}
