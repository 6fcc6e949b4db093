/**
 * Finding a job the caller may see (docs/design.md#reading-a-job and
 * docs/design.md#consumers-and-ownership): identify the caller through the pipeline's identify
 * stage, then apply the ownership rule. A job of another consumer, or of another service type than
 * the path names, is indistinguishable from a missing one.
 */
import type { Context } from "hono";
import { errors } from "../../core/errors.ts";
import type { RequestState } from "../../core/pipeline/context.ts";
import { callerAuthOf } from "../../core/pipeline/caller-auth.ts";
import { sentBlankConsumer } from "../../core/pipeline/identity.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import type { JobRecord, JobStore } from "../../core/jobs/types.ts";

export type JobAccess =
  | { kind: "job"; ctx: RequestState; job: JobRecord }
  | { kind: "answer"; response: Response };

/** The caller's identity for a request that is not a submission (no admit or limits stages). */
export async function identify(api: PluginApi, c: Context, serviceType: string): Promise<{ ctx: RequestState; answer?: Response }> {
  const ctx = api.newContext(c.req.raw, "async", serviceType);
  const answer = await api.pipeline.runStage("identify", ctx);
  return { ctx, answer };
}

/**
 * Ownership (docs/design.md#consumers-and-ownership): a caller without a consumer identity (no
 * header at all: admin/internal access, or consumer identification off) sees every job; one with an
 * identity sees only jobs saved under the same consumer.
 */
export function owns(caller: string | undefined, owner: string | undefined): boolean {
  return caller === undefined || caller === owner;
}

export const expiredResponse = (): Response =>
  new Response(JSON.stringify({ status: "expired" }), { status: 410, headers: { "content-type": "application/json" } });

export async function findJob(api: PluginApi, store: JobStore, c: Context): Promise<JobAccess> {
  const type = c.req.param("type") ?? "";
  const id = c.req.param("id") ?? "";
  // Made only when thrown: an error's stack costs microseconds, and most reads find their job.
  const missing = () => errors.jobNotFound(`job "${id}" of service type "${type}" not found`);
  // A blank consumer header is sent, so no bypass; it names nobody, so it owns no job (404
  // as for another consumer's job) where every other request refuses it (400).
  if (sentBlankConsumer(api.config, c.req.raw, callerAuthOf(api))) throw missing();
  const { ctx, answer } = await identify(api, c, type);
  if (answer) return { kind: "answer", response: answer };
  if (!store.keys.isJobId(id)) throw missing();
  const caller = ctx.principal.consumer;
  const found = await store.lookup(id);
  if (found.found === "none") throw missing();
  if (found.found === "tombstone") {
    if (found.serviceType !== type || !owns(caller, found.consumer)) throw missing();
    return { kind: "answer", response: expiredResponse() };
  }
  if (found.job.service_type !== type || !owns(caller, found.job.consumer_name)) throw missing();
  return { kind: "job", ctx, job: found.job };
}
