/**
 * The webhook admin endpoints (docs/console.md#admin-api): `GET /-/webhooks/retries` (deliveries
 * waiting for a retry or being attempted), `GET /-/webhooks/deadletter` and
 * `POST /-/webhooks/deadletter/redeliver`. A redelivery puts the exact notification body
 * back on the durable retry schedule (queue.ts) as a new delivery with every attempt of
 * `webhooks.max_retries` ahead of it; the retry poll sends it, signed at that moment.
 */
import type { Context } from "hono";
import { errors, GatewayError } from "../../core/errors.ts";
import { isRecord } from "../../core/llm/json.ts";
import { type Page, pageParams } from "../../core/pagination.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import { readAdminJson } from "../../core/request-body/admin-json.ts";
import type { DeadLetterEntry, DeliveryQueue, DeliveryRecord } from "./queue.ts";

const PAGE = { defaultLimit: 20, maxLimit: 100 };
/** Entries read per round when the whole dead-letter list is walked. */
const BATCH = 200;

export interface DeadLetterView {
  /** The delivery id (the job id: one notification per job), what `redeliver` takes. */
  id: string;
  job_id: string;
  service_type: string;
  status?: string;
  url: string;
  attempts: number;
  failed_at: string;
  last_error: string;
}

export interface Skipped {
  id: string;
  reason: string;
}

export interface WebhookAdminDeps {
  queue: DeliveryQueue;
  now(): number;
  /** The notification body of a job, rebuilt from the job store (entries written before bodies were kept); undefined when the job is gone. */
  rebuildBody(jobId: string): Promise<string | undefined>;
}

function parse(text: string): DeadLetterEntry | undefined {
  try {
    const entry = JSON.parse(text) as unknown;
    return isRecord(entry) && typeof entry.job_id === "string" ? (entry as unknown as DeadLetterEntry) : undefined;
  } catch {
    return undefined;
  }
}

function viewOf(entry: DeadLetterEntry): DeadLetterView {
  const { body: _body, ...rest } = entry;
  return { id: entry.job_id, ...rest };
}

export class WebhookAdmin {
  constructor(private readonly deps: WebhookAdminDeps) {}

  async deadLetters({ limit, offset }: Page): Promise<{ total: number; deliveries: DeadLetterView[] }> {
    const { queue } = this.deps;
    const [total, page] = await Promise.all([queue.deadLetterCount(), queue.deadLetters(offset, offset + limit - 1)]);
    return { total, deliveries: page.flatMap((text) => parse(text) ?? []).map(viewOf) };
  }

  async retries({ limit, offset }: Page): Promise<{ total: number; deliveries: Array<Omit<DeliveryRecord, "body"> & { due_at: string | null }> }> {
    const { queue } = this.deps;
    const [total, ids] = await Promise.all([queue.depth(), queue.scheduled(offset + limit)]);
    const page = await Promise.all(
      ids.slice(offset).map(async ([id, dueAt]) => {
        const record = await queue.load(id);
        if (!record) return [];
        const { body: _body, ...rest } = record;
        return [{ ...rest, due_at: new Date(dueAt).toISOString() }];
      }),
    );
    return { total, deliveries: page.flat() };
  }

  /** Redelivers the dead letters of `ids` (default: every one there is now). */
  async redeliver(ids: string[] | undefined): Promise<{ redelivered: number; skipped: Skipped[] }> {
    const wanted = ids === undefined ? undefined : new Set(ids);
    const found = new Set<string>();
    const skipped: Skipped[] = [];
    let redelivered = 0;
    for (const text of await this.all()) {
      const entry = parse(text);
      if (!entry || (wanted && !wanted.has(entry.job_id))) continue;
      found.add(entry.job_id);
      const body = entry.body ?? (await this.deps.rebuildBody(entry.job_id));
      if (body === undefined) {
        skipped.push({ id: entry.job_id, reason: "the notification cannot be rebuilt: the entry predates stored bodies and the job is gone" });
        continue;
      }
      const now = this.deps.now();
      const record: DeliveryRecord = {
        id: entry.job_id,
        job_id: entry.job_id,
        service_type: entry.service_type,
        status: entry.status ?? (JSON.parse(body) as { status?: string }).status ?? "",
        url: entry.url,
        body,
        // The retry poll counts the attempt it starts: a redelivery gets all of max_retries.
        attempts: 0,
        created_at: new Date(now).toISOString(),
      };
      const outcome = await this.deps.queue.redeliver(text, record, now);
      if (outcome === 1) redelivered++;
      else if (outcome === -1) skipped.push({ id: entry.job_id, reason: "a delivery of this job is under way; its dead letter stays" });
      // 0: someone else redelivered it meanwhile; not ours to count.
    }
    for (const id of wanted ?? []) if (!found.has(id)) skipped.push({ id, reason: "not in the dead-letter list" });
    return { redelivered, skipped };
  }

  private async all(): Promise<string[]> {
    const all: string[] = [];
    for (let start = 0;; start += BATCH) {
      const page = await this.deps.queue.deadLetters(start, start + BATCH - 1);
      all.push(...page);
      if (page.length < BATCH) return all;
    }
  }
}

async function redeliverBody(c: Context): Promise<string[] | undefined> {
  // An empty body means "all", like {}.
  if ((c.req.header("content-length") ?? "") === "0") return undefined;
  const value = await readAdminJson(c.req.raw, 'a JSON body {"ids": ["<delivery id>", ...]} (or {} for all)');
  if (!isRecord(value)) throw errors.badRequest('the body must be a JSON object: {"ids": [...]}, or {} to redeliver every dead letter');
  if (value.ids === undefined) return undefined;
  const ids = value.ids;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string" && id !== "")) {
    throw errors.badRequest('"ids" must be a list of delivery ids (the job ids, strings); leave it out to redeliver every dead letter');
  }
  if (ids.length === 0) throw errors.badRequest('"ids" is empty: name the deliveries to redeliver, or leave "ids" out to redeliver them all');
  return ids as string[];
}

export function registerWebhookAdminRoutes(api: PluginApi, admin: WebhookAdmin): void {
  const answering = (name: string, handler: (c: Context) => Promise<Response>) =>
    async function webhookAdmin(c: Context): Promise<Response> {
      try {
        return await handler(c);
      } catch (error) {
        if (error instanceof GatewayError) return error.toResponse();
        api.log.error("webhook_admin_failed", { route: name, error });
        return errors.storeUnavailable("the webhook store is unavailable; try again").toResponse();
      }
    };
  const page = (c: Context) => pageParams((name) => c.req.query(name), PAGE);

  api.routes.get(
    "/-/webhooks/retries",
    answering("retries", async (c) => {
      const query = page(c);
      return c.json({ ...query, ...(await admin.retries(query)) });
    }),
  );
  api.routes.get(
    "/-/webhooks/deadletter",
    answering("deadletter", async (c) => {
      const query = page(c);
      const { total, deliveries } = await admin.deadLetters(query);
      return c.json({ total, ...query, deliveries });
    }),
  );
  api.routes.post(
    "/-/webhooks/deadletter/redeliver",
    answering("redeliver", async (c) => {
      const ids = await redeliverBody(c);
      const outcome = await admin.redeliver(ids);
      api.log.info("webhook_deadletter_redelivered", { redelivered: outcome.redelivered, skipped: outcome.skipped.length, ids: ids?.length ?? "all" });
      return c.json(outcome);
    }),
  );
}
