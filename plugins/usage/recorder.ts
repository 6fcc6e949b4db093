/**
 * Counts usage from the events of a request's life. Counts are gathered for one turn of the
 * event loop and written together, one store operation (`usageRecord`) per service type and
 * day for every event of that turn, so under load a request costs a share of a round trip;
 * `close` writes what is still gathered (nothing is lost on shutdown).
 *
 * - sync and LLM: `requestEnded`, as the answer ends, counts the request (when it was served:
 *   status below 400 and no `outcome`; a request a plugin refused with an `outcome`, such as a
 *   guardrail's block, is counted under that outcome instead, whatever its status) and carries
 *   the tokens its `llm.usage` event left waiting (the event comes first, from inside the
 *   handler, so the two become one write);
 * - async: `job.submitted` counts the submission as a request and a job;
 * - `relay.processed` adds inference seconds, in whichever process ran the job.
 *
 * Costs (the `cost` of `llm.usage` and `relay.processed`, when pricing is on) are added as
 * whole nano-units next to the tokens. The report groups (`group_by`: per consumer, model,
 * API key and mode, a client's request or a batch line) get each request, its tokens, its
 * cost and its outcome in a second operation of the same batch. A request's tokens wait for
 * its end under its consumer, type, key and mode (the event's `origin`), so a batch line and a
 * client's request ending at the same moment each keep their own tokens in their own mode.
 *
 * A request's own counts are in the store before the client has its whole answer:
 * `requestEnded` gives the write they are part of, which the answer's end waits for (the
 * turn's batch is written as before: no store operation of its own).
 *
 * Anonymous requests (no consumer) are not counted. Store errors are logged and lost:
 * usage never fails a request.
 */
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import type { RequestMode, RequestOrigin } from "../../core/pipeline/context.ts";
import type { GatewayEvents } from "../../core/plugins/types.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import type { JobRecord } from "../../core/jobs/types.ts";
import { EndOfTurnWriter } from "../../core/stores/end-of-turn.ts";
import { toNanos } from "../../core/pricing/price.ts";
import { DAY_MS, labelOf, PERIODS } from "./calendar.ts";
import { type GroupCounter, type GroupDimension, type OutcomeCounter, outcomeCounter, usageKeys } from "./keys.ts";
import { groupsAdd, usageRecord } from "./ops.ts";
import { keepIfRoom } from "../../core/bounded-cache.ts";

/**
 * docs/design.md#usage-retention: cross-consumer daily and weekly buckets expire; monthly ones are
 * kept.
 */
export const DAILY_TTL_MS = 400 * DAY_MS;
export const WEEKLY_TTL_MS = 800 * DAY_MS;

/**
 * Tokens waiting for their request's `request.finished`. Bounded: if finish events ever
 * stopped coming, tokens are written on their own instead of piling up here.
 */
const MAX_WAITING = 10_000;

interface Increments {
  requests?: number;
  jobs?: number;
  processingSeconds?: number;
  prompt?: number;
  completion?: number;
  /** Cost in nano-units of pricing.currency. */
  costNanos?: number;
}

/** The request whose answer is ending, as `requestEnded` reads it. */
export interface EndedRequest {
  mode: RequestMode;
  /** "batch" for a batch line the gateway ran for its owner; the report's `mode` groups tell the two apart. */
  origin: RequestOrigin;
  serviceType: string;
  consumer: string;
  /** The served model alias ("" when unknown). */
  model: string;
  /** The API key id the request came with, when auth knows one. */
  key?: string;
  /** How a refused request ended (`RequestContext.outcome`): counted under it, and not as served. */
  outcome?: string;
}

export interface RecorderDeps {
  kv: KvStore;
  clock: Clock;
  log: Logger;
  /** `usage.retention` in ms; 0 = all-time. */
  retentionMs: number;
}

/** One consumer's counts gathered in the current turn, with the time of its latest event. */
interface Gathered {
  consumer: string;
  now: number;
  counts: Required<Increments>;
  /** Refused requests per outcome counter; built on first use (most turns have none). */
  outcomes?: Map<OutcomeCounter, number>;
}

/** The events of one service type and one UTC day: one `usageRecord` call (and one `groupsAdd`). */
interface Batch {
  type: string;
  day: number;
  consumers: Map<string, Gathered>;
  /** Report group field (keys.ts `groupField`) -> increment. */
  groups: Map<string, number>;
}

/** The tokens and cost of one model's responses, for the report groups. */
interface ModelCounts {
  model: string;
  tokens: number;
  costNanos: number;
}

/**
 * Tokens and cost of a consumer's responses (with one API key, or none) waiting for their
 * requests' end, and per model for the report groups.
 */
interface Held {
  prompt: number;
  completion: number;
  costNanos: number;
  /** Usually one model: a list, walked without an iterator. */
  models: ModelCounts[];
}

/** Who a request counts for in the report groups (`group_by`). */
export interface GroupOf {
  model: string;
  /** The API key id when the request came with one; the consumer stands in otherwise. */
  key?: string;
  /** A client's request (the default: jobs and their processing) or a batch line. */
  origin?: RequestOrigin;
}

/** The report's `mode` group of a request: a client's request or a batch line. */
const modeOf = (origin: RequestOrigin): string => (origin === "batch" ? "batch" : "interactive");

/** The fields of one group of the report (keys.ts `groupField`), one per counter. */
type GroupFields = Record<GroupCounter, string>;

/** The keys a service type's batches of one day write to. */
interface DayKeys {
  day: number;
  /** `usageRecord`'s first five KEYS: the consumer index, the type's rank, the three buckets. */
  record: string[];
  /** `groupsAdd`'s KEYS: the daily, weekly and monthly group hashes. */
  groups: string[];
  fieldPrefix: string;
}

/** Past this many names a cache of keys built from them keeps what it holds: consumers, models and keys come from callers (docs/design.md#bounded-caches). */
const MAX_CACHED = 10_000;

/** Whose held tokens: one consumer on one type with one API key (none: ""), so two keys of a consumer keep theirs apart. */
const heldId = (consumer: string, type: string, key: string | undefined, origin: RequestOrigin | undefined) =>
  `${consumer}\n${type}\n${key ?? ""}\n${origin ?? "client"}`;

function addTo(groups: Map<string, number>, field: string, amount: number): void {
  groups.set(field, (groups.get(field) ?? 0) + amount);
}

/** Adds `amount` of one counter to the groups of a consumer, a model, a key and a mode. */
function addToGroups(
  groups: Map<string, number>,
  counter: GroupCounter,
  amount: number,
  consumer: GroupFields,
  model: GroupFields,
  key: GroupFields,
  mode: GroupFields,
): void {
  if (amount === 0) return;
  addTo(groups, consumer[counter], amount);
  addTo(groups, model[counter], amount);
  addTo(groups, key[counter], amount);
  addTo(groups, mode[counter], amount);
}

/** The held counts of one model, added when missing. */
function countsOf(held: Held, model: string): ModelCounts {
  for (const counts of held.models) if (counts.model === model) return counts;
  const counts = { model, tokens: 0, costNanos: 0 };
  held.models.push(counts);
  return counts;
}

export class UsageRecorder {
  private readonly waiting = new Map<string, Held>();
  /** This turn's batches: one per service type (two around midnight), so a list. */
  private batches: Batch[] = [];
  private readonly writer = new EndOfTurnWriter(() => this.writeGathered());
  /** Keys built once rather than for every request or batch (`usageKeys`). */
  private readonly dayKeys = new Map<string, DayKeys>();
  private readonly consumerKeys = new Map<string, string>();
  private readonly groupFields: Record<GroupDimension, Map<string, GroupFields>> = { consumer: new Map(), model: new Map(), key: new Map(), mode: new Map() };

  constructor(private readonly deps: RecorderDeps) {}

  tokens(event: LlmUsageEvent): void {
    if (event.consumer === "" || event.serviceType === "") return;
    const id = heldId(event.consumer, event.serviceType, event.keyId, event.origin);
    const held = this.waiting.get(id);
    const costNanos = event.cost !== undefined ? toNanos(event.cost) : 0;
    const tokens = event.prompt + event.completion;
    if (!held && this.waiting.size >= MAX_WAITING) {
      this.write(event.consumer, event.serviceType, { prompt: event.prompt, completion: event.completion, costNanos }, {
        model: event.model,
        key: event.keyId,
        origin: event.origin,
      });
      return;
    }
    const entry = held ?? { prompt: 0, completion: 0, costNanos: 0, models: [] };
    entry.prompt += event.prompt;
    entry.completion += event.completion;
    entry.costNanos += costNanos;
    const perModel = countsOf(entry, event.model);
    perModel.tokens += tokens;
    perModel.costNanos += costNanos;
    if (!held) this.waiting.set(id, entry);
  }

  /**
   * The answer to a consumer's request is ending with `status`: counts a served sync or LLM
   * request (an async submission was counted by `job.submitted` from inside its handler).
   * Resolves once this request's counts are written; undefined when it has none.
   */
  requestEnded(request: EndedRequest, status: number): Promise<void> | undefined {
    const { consumer, serviceType } = request;
    if (serviceType === "") return undefined;
    if (request.mode === "async") return status < 400 ? this.writer.written() : undefined;
    const id = heldId(consumer, serviceType, request.key, request.origin);
    const held = this.waiting.get(id);
    if (held) this.waiting.delete(id);
    const { outcome } = request;
    const served = status < 400 && outcome === undefined ? 1 : 0;
    if (!served && !held && outcome === undefined) return undefined;
    // What `write` does, without its argument objects: this runs for every request.
    const now = this.deps.clock.now();
    const batch = this.batchOf(serviceType, now);
    const gathered = this.gathered(batch, consumer, now);
    const sum = gathered.counts;
    sum.requests += served;
    const byConsumer = this.groupFieldsOf("consumer", consumer);
    const byKey = this.groupFieldsOf("key", request.key ?? consumer);
    const byMode = this.groupFieldsOf("mode", modeOf(request.origin));
    addToGroups(batch.groups, "requests", served, byConsumer, this.groupFieldsOf("model", request.model), byKey, byMode);
    if (outcome !== undefined) this.countOutcome(batch, gathered, outcome, request);
    if (held) {
      for (const counts of held.models) {
        const byModel = this.groupFieldsOf("model", counts.model);
        addToGroups(batch.groups, "tokens", Math.round(counts.tokens), byConsumer, byModel, byKey, byMode);
        addToGroups(batch.groups, "cost_nanos", Math.round(counts.costNanos), byConsumer, byModel, byKey, byMode);
      }
      sum.prompt += Math.round(held.prompt);
      sum.completion += Math.round(held.completion);
      sum.costNanos += Math.round(held.costNanos);
    }
    this.writer.schedule();
    return this.writer.written();
  }

  submitted(job: JobRecord): void {
    if (job.consumer_name === undefined || job.consumer_name === "") return;
    this.write(job.consumer_name, job.service_type, { requests: 1, jobs: 1 }, { model: job.model, key: job.api_key_id });
  }

  processed(event: GatewayEvents["relay.processed"]): void {
    if (event.consumer === undefined || event.consumer === "" || !(event.seconds > 0)) return;
    this.write(event.consumer, event.serviceType, { processingSeconds: event.seconds, costNanos: event.cost !== undefined ? toNanos(event.cost) : 0 }, {
      model: event.model,
      key: event.keyId,
    });
  }

  /**
   * Adds counts to the current turn's batch; the batch is written when the turn ends. With
   * `group`, the report groups (`group_by`) get the requests, tokens and cost too.
   */
  write(consumer: string, type: string, counts: Increments, group?: GroupOf): void {
    const now = this.deps.clock.now();
    const batch = this.batchOf(type, now);
    if (group) {
      const byConsumer = this.groupFieldsOf("consumer", consumer);
      const byModel = this.groupFieldsOf("model", group.model);
      const byKey = this.groupFieldsOf("key", group.key ?? consumer);
      // Jobs and their processing come from clients' submissions.
      const byMode = this.groupFieldsOf("mode", modeOf(group.origin ?? "client"));
      addToGroups(batch.groups, "requests", Math.round(counts.requests ?? 0), byConsumer, byModel, byKey, byMode);
      addToGroups(batch.groups, "tokens", Math.round((counts.prompt ?? 0) + (counts.completion ?? 0)), byConsumer, byModel, byKey, byMode);
      addToGroups(batch.groups, "cost_nanos", Math.round(counts.costNanos ?? 0), byConsumer, byModel, byKey, byMode);
    }
    const sum = this.gathered(batch, consumer, now).counts;
    sum.requests += Math.round(counts.requests ?? 0);
    sum.jobs += Math.round(counts.jobs ?? 0);
    sum.prompt += Math.round(counts.prompt ?? 0);
    sum.completion += Math.round(counts.completion ?? 0);
    sum.costNanos += Math.round(counts.costNanos ?? 0);
    sum.processingSeconds += counts.processingSeconds ?? 0;
    this.writer.schedule();
  }

  private batchOf(type: string, now: number): Batch {
    const day = Math.floor(now / DAY_MS);
    for (const batch of this.batches) if (batch.type === type && batch.day === day) return batch;
    const batch: Batch = { type, day, consumers: new Map(), groups: new Map() };
    this.batches.push(batch);
    return batch;
  }

  /** The consumer's counts in the batch, its latest event now. */
  private gathered(batch: Batch, consumer: string, now: number): Gathered {
    let gathered = batch.consumers.get(consumer);
    if (!gathered) {
      gathered = { consumer, now, counts: { requests: 0, jobs: 0, prompt: 0, completion: 0, costNanos: 0, processingSeconds: 0 } };
      batch.consumers.set(consumer, gathered);
    }
    gathered.now = Math.max(gathered.now, now);
    return gathered;
  }

  /** One request refused with `outcome`: under it in the consumer's counts and in its report groups. */
  private countOutcome(batch: Batch, gathered: Gathered, outcome: string, request: EndedRequest): void {
    const counter = outcomeCounter(outcome);
    const outcomes = (gathered.outcomes ??= new Map());
    outcomes.set(counter, (outcomes.get(counter) ?? 0) + 1);
    // Rare next to served requests: the fields are built here rather than cached.
    addTo(batch.groups, usageKeys.groupField("consumer", request.consumer, counter), 1);
    addTo(batch.groups, usageKeys.groupField("model", request.model, counter), 1);
    addTo(batch.groups, usageKeys.groupField("key", request.key ?? request.consumer, counter), 1);
    addTo(batch.groups, usageKeys.groupField("mode", modeOf(request.origin), counter), 1);
  }

  private groupFieldsOf(dimension: GroupDimension, name: string): GroupFields {
    const cache = this.groupFields[dimension];
    let fields = cache.get(name);
    if (!fields) {
      fields = keepIfRoom(cache, name, {
        requests: usageKeys.groupField(dimension, name, "requests"),
        tokens: usageKeys.groupField(dimension, name, "tokens"),
        cost_nanos: usageKeys.groupField(dimension, name, "cost_nanos"),
      }, MAX_CACHED);
    }
    return fields;
  }

  private consumerKeyOf(consumer: string): string {
    let key = this.consumerKeys.get(consumer);
    if (key === undefined) key = keepIfRoom(this.consumerKeys, consumer, usageKeys.consumer(consumer), MAX_CACHED);
    return key;
  }

  private dayKeysOf(type: string, day: number): DayKeys {
    let keys = this.dayKeys.get(type);
    if (keys?.day !== day) {
      const dayStart = day * DAY_MS;
      keys = {
        day,
        record: [usageKeys.consumers, usageKeys.rank(type), ...PERIODS.map((period) => usageKeys.bucket(period, type, labelOf(period, dayStart)))],
        groups: PERIODS.map((period) => usageKeys.groups(period, type, labelOf(period, dayStart))),
        fieldPrefix: usageKeys.fieldPrefix(type),
      };
      this.dayKeys.set(type, keys);
    }
    return keys;
  }

  /** Writes everything gathered so far and waits for every write in flight. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  private writeGathered(): Promise<void> | undefined {
    const batches = this.batches;
    if (batches.length === 0) return undefined;
    this.batches = [];
    return batches.length === 1 ? this.writeBatch(batches[0]) : Promise.all(batches.map((batch) => this.writeBatch(batch))).then(() => undefined);
  }

  /** One round trip: the consumers' records, the indexes and the three calendar buckets. */
  private async writeBatch(batch: Batch): Promise<void> {
    const dayKeys = this.dayKeysOf(batch.type, batch.day);
    const keys = dayKeys.record.slice();
    const totals = { requests: 0, jobs: 0, prompt: 0, completion: 0, costNanos: 0, processingSeconds: 0 };
    const records: (string | number)[] = [];
    let outcomeTotals: Map<OutcomeCounter, number> | undefined;
    for (const { consumer, now, counts, outcomes } of batch.consumers.values()) {
      keys.push(this.consumerKeyOf(consumer));
      records.push(
        consumer,
        now,
        counts.requests,
        counts.jobs,
        counts.prompt,
        counts.completion,
        counts.costNanos,
        counts.processingSeconds,
        outcomes?.size ?? 0,
      );
      if (outcomes) {
        outcomeTotals ??= new Map();
        for (const [counter, count] of outcomes) {
          records.push(counter, count);
          outcomeTotals.set(counter, (outcomeTotals.get(counter) ?? 0) + count);
        }
      }
      totals.requests += counts.requests;
      totals.jobs += counts.jobs;
      totals.prompt += counts.prompt;
      totals.completion += counts.completion;
      totals.costNanos += counts.costNanos;
      totals.processingSeconds += counts.processingSeconds;
    }
    // The report groups in a second operation, sent at once (one connection's pipeline).
    const groups = batch.groups.size === 0 ? undefined : this.writeGroups(batch, dayKeys.groups);
    try {
      await this.deps.kv.run(usageRecord, keys, [
        this.deps.retentionMs,
        DAILY_TTL_MS,
        WEEKLY_TTL_MS,
        dayKeys.fieldPrefix,
        totals.requests,
        totals.jobs,
        totals.prompt,
        totals.completion,
        totals.costNanos,
        totals.processingSeconds,
        outcomeTotals?.size ?? 0,
        ...(outcomeTotals ? [...outcomeTotals].flat() : []),
        ...records,
      ]);
    } catch (error) {
      this.deps.log.warn("usage_not_recorded", { consumers: [...batch.consumers.keys()], service_type: batch.type, error });
    }
    await groups;
  }

  private async writeGroups(batch: Batch, keys: string[]): Promise<void> {
    const args: (string | number)[] = [DAILY_TTL_MS, WEEKLY_TTL_MS];
    batch.groups.forEach((amount, field) => args.push(field, amount));
    try {
      await this.deps.kv.run(groupsAdd, keys, args);
    } catch (error) {
      this.deps.log.warn("usage_groups_not_recorded", { service_type: batch.type, error });
    }
  }
}
