/**
 * The queues as an operator sees them (docs/console.md#admin-api): `GET /-/queues` (depth,
 * processing, dead letters, the age of the oldest pending job per model), `GET /-/relay/deadletter`
 * (the jobs the GC reaper gave up on, with each job's error) and
 * `POST /-/relay/deadletter/discard`. A dead-lettered job's input file is already gone,
 * so it cannot be rerun: discarding only takes it off the list (its failed record expires
 * with its TTL as any failed job's).
 */
import type { Context } from "hono";
import { errors } from "../../core/errors.ts";
import { isRecord } from "../../core/llm/json.ts";
import { pageParams } from "../../core/pagination.ts";
import { queueModels } from "../../core/jobs/queue-models.ts";
import type { JobRecord } from "../../core/jobs/types.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import { readAdminJson } from "../../core/request-body/admin-json.ts";
import type { KvJobStore } from "./store.ts";

const PAGE_DEFAULT = 20;
const PAGE_MAX = 100;
/**
 * How many of the next jobs in line (and of the retries) are read for the oldest pending
 * age: ordinary jobs queue at the tail in submission order, so the oldest is among the first
 * after any priority jobs and retries at the head; reading every pending job would not scale.
 */
const OLDEST_WINDOW = 50;
/** Ids read per round when a whole list is walked. */
const BATCH = 500;

export interface QueueView {
  model: string;
  pending: number;
  processing: number;
  deadletter: number;
  oldest_pending_age_seconds: number | null;
}

export interface DeadLetteredJob {
  job_id: string;
  model: string;
  /** Why the job failed; "" when its record has expired (only the id is left). */
  error: string;
  status: string;
  service_type?: string;
  consumer_name?: string;
  created_at?: string;
  failed_at?: string;
  attempts?: number;
}

export class QueueAdmin {
  constructor(
    private readonly store: KvJobStore,
    private readonly api: Pick<PluginApi, "kv" | "clock">,
  ) {}

  /** Every configured model's queues, and those of models removed from the config that still have some. */
  async queues(): Promise<QueueView[]> {
    const models = await queueModels(this.api.kv, this.store);
    return await Promise.all(models.map((model) => this.queue(model)));
  }

  private async queue(model: string): Promise<QueueView> {
    const { kv } = this.api;
    const keys = this.store.keys;
    const [queued, retrying, processing, deadletter, head, retries] = await Promise.all([
      kv.llen(keys.queue(model)),
      kv.zcard(keys.retry(model)),
      kv.llen(keys.processing(model)),
      kv.llen(keys.deadletter(model)),
      kv.lrange(keys.queue(model), 0, OLDEST_WINDOW - 1),
      kv.zrangeByScore(keys.retry(model), -Infinity, Infinity, OLDEST_WINDOW),
    ]);
    const records = await Promise.all([...head, ...retries].map((id) => this.store.get(id)));
    const created = records.flatMap((job) => (job?.status === "pending" ? [Date.parse(job.created_at)] : [])).filter((ms) => !Number.isNaN(ms));
    const oldest = created.length === 0 ? null : Math.max(0, Math.round((this.api.clock.now() - Math.min(...created)) / 1000));
    return { model, pending: queued + retrying, processing, deadletter, oldest_pending_age_seconds: oldest };
  }

  /** The models to read: one named (which must have a queue), else every one with queues. */
  async modelsOf(named: string | undefined): Promise<string[]> {
    if (named === undefined) return await queueModels(this.api.kv, this.store);
    const configured = this.store.queueModels();
    // A model removed from the config may still have dead letters; it can be read and discarded.
    if (configured.includes(named) || (await this.api.kv.llen(this.store.keys.deadletter(named))) > 0) return [named];
    throw errors.notFound(`no queue for model "${named}"; the models with queues are: ${configured.join(", ") || "(none)"}`);
  }

  /** One page over the dead-letter lists of `models`, in list order (oldest first), model after model. */
  async deadLetters(models: string[], limit: number, offset: number): Promise<{ total: number; jobs: DeadLetteredJob[] }> {
    const { kv } = this.api;
    const lengths = await Promise.all(models.map((model) => kv.llen(this.store.keys.deadletter(model))));
    const total = lengths.reduce((sum, n) => sum + n, 0);
    const ids: Array<[string, string]> = [];
    let skip = offset;
    for (const [i, model] of models.entries()) {
      const wanted = limit - ids.length;
      if (wanted <= 0) break;
      if (skip >= lengths[i]) {
        skip -= lengths[i];
        continue;
      }
      const page = await kv.lrange(this.store.keys.deadletter(model), skip, skip + wanted - 1);
      skip = 0;
      for (const id of page) ids.push([model, id]);
    }
    const jobs = await Promise.all(ids.map(async ([model, id]) => view(model, id, await this.store.get(id))));
    return { total, jobs };
  }

  /** Takes `ids` (default: every entry there is now) off the model's dead-letter list. */
  async discard(model: string, ids: string[] | undefined): Promise<number> {
    const { kv } = this.api;
    const key = this.store.keys.deadletter(model);
    const targets = ids ?? (await this.allOf(key));
    let discarded = 0;
    // One LREM per id: each is atomic, so two operators discarding at once count each entry once.
    for (const id of new Set(targets)) discarded += await kv.lrem(key, 0, id);
    return discarded;
  }

  private async allOf(key: string): Promise<string[]> {
    const all: string[] = [];
    for (let start = 0;; start += BATCH) {
      const page = await this.api.kv.lrange(key, start, start + BATCH - 1);
      all.push(...page);
      if (page.length < BATCH) return all;
    }
  }
}

function view(model: string, id: string, job: JobRecord | null): DeadLetteredJob {
  if (!job) return { job_id: id, model, error: "", status: "expired" };
  const out: DeadLetteredJob = { job_id: id, model, error: job.error ?? "", status: job.status, service_type: job.service_type, created_at: job.created_at };
  if (job.consumer_name !== undefined) out.consumer_name = job.consumer_name;
  if (job.completed_at !== undefined) out.failed_at = job.completed_at;
  if (job.attempts !== undefined) out.attempts = job.attempts;
  return out;
}

const optional = (value: string | undefined) => (value === undefined || value.trim() === "" ? undefined : value.trim());

/** `{model, ids?}`: a 400 naming what is wrong. */
async function discardBody(c: Context): Promise<{ model: string; ids?: string[] }> {
  const value = await readAdminJson(c.req.raw, 'a JSON body {"model": "<model alias>", "ids": ["<job id>", ...]}');
  if (!isRecord(value)) throw errors.badRequest('the body must be a JSON object {"model": "<model alias>", "ids": [...]}');
  const model = value.model;
  if (typeof model !== "string" || model.trim() === "") throw errors.badRequest('the body needs "model": the model whose dead letters to discard');
  if (value.ids === undefined) return { model: model.trim() };
  const ids = value.ids;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string" && id !== "")) {
    throw errors.badRequest('"ids" must be a list of job ids (strings); leave it out to discard every dead letter of the model');
  }
  if (ids.length === 0) throw errors.badRequest('"ids" is empty: name the jobs to discard, or leave "ids" out to discard them all');
  return { model: model.trim(), ids: ids as string[] };
}

export function registerQueueAdminRoutes(
  api: PluginApi,
  admin: QueueAdmin,
  answering: (name: string, handler: (c: Context) => Promise<Response>) => (c: Context) => Promise<Response>,
): void {
  api.routes.get(
    "/-/queues",
    answering("queues", async (c) => c.json({ queues: await admin.queues() })),
  );

  api.routes.get(
    "/-/relay/deadletter",
    answering("relay_deadletter", async (c) => {
      const { limit, offset } = pageParams((name) => c.req.query(name), { defaultLimit: PAGE_DEFAULT, maxLimit: PAGE_MAX });
      const models = await admin.modelsOf(optional(c.req.query("model")));
      const page = await admin.deadLetters(models, limit, offset);
      return c.json({ total: page.total, limit, offset, jobs: page.jobs });
    }),
  );

  api.routes.post(
    "/-/relay/deadletter/discard",
    answering("relay_deadletter_discard", async (c) => {
      const body = await discardBody(c);
      const [model] = await admin.modelsOf(body.model);
      const discarded = await admin.discard(model, body.ids);
      api.log.info("relay_deadletter_discarded", { model, discarded, ids: body.ids?.length ?? "all" });
      return c.json({ model, discarded });
    }),
  );
}
