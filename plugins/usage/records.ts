/**
 * Usage records (docs/design.md#usage-record) for `GET /usage` and `GET /-/usage` (2.5): stored
 * counters, shaped per service type, with the live limit windows when the limits plugin runs.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { LimitWindows } from "../../core/limits/windows.ts";
import { usageKeys } from "./keys.ts";
import { hashesRead, rankPage } from "./ops.ts";
import { isEmpty, parseConsumerHash, totalsOf, typeKinds, type TypeUsage, type UsageRecordView, windowView } from "./shape.ts";

export interface RecordsDeps {
  kv: KvStore;
  services: readonly ServiceConfig[];
  /** `usage.retention` as 2.4 shows it: "all-time" or a duration string. */
  retention: string;
  /** Pricing is on: every total shows `cost`. */
  priced: boolean;
  /** Absent when the limits plugin is off: records then carry no `window`. */
  windows?: LimitWindows;
}

export interface UsagePage {
  total: number;
  limit: number;
  offset: number;
  consumers: UsageRecordView[];
}

/** [field, value, ...] as an object. */
function fieldsOf(flat: readonly string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
  return fields;
}

export class UsageRecords {
  private readonly kindOf: (type: string) => { llm: boolean };

  constructor(private readonly deps: RecordsDeps) {
    this.kindOf = typeKinds(deps.services);
  }

  /** One consumer's record (`GET /usage`, `GET /-/usage?consumer=`), optionally one type only. */
  async one(consumer: string, type?: string): Promise<UsageRecordView> {
    const [record] = await this.build([consumer], [await this.deps.kv.hgetall(usageKeys.consumer(consumer))], type);
    return record;
  }

  /**
   * A page of consumers: most recently active first, or with `type` ranked by that type's
   * requests. Members whose record has expired (`usage.retention`) are dropped from the
   * index as they are met, so a page can come back one short once.
   */
  async page(type: string | undefined, limit: number, offset: number): Promise<UsagePage> {
    const index = type === undefined ? usageKeys.consumers : usageKeys.rank(type);
    const [total, ...members] = await this.deps.kv.run(rankPage, [index], [offset, limit]);
    const consumers = members.map(String);
    const hashes = consumers.length === 0 ? [] : await this.deps.kv.run(hashesRead, consumers.map(usageKeys.consumer), []);
    const fields = hashes.map(fieldsOf);
    const live: string[] = [];
    const liveFields: Record<string, string>[] = [];
    const stale: string[] = [];
    consumers.forEach((consumer, i) => {
      const types = parseConsumerHash(fields[i]).types;
      const has = type === undefined ? types.size > 0 : types.has(type);
      if (has) {
        live.push(consumer);
        liveFields.push(fields[i]);
      } else {
        stale.push(consumer);
      }
    });
    await Promise.all(stale.map((consumer) => this.deps.kv.zrem(index, consumer).catch(() => 0)));
    return { total: Number(total) - stale.length, limit, offset, consumers: await this.build(live, liveFields, type) };
  }

  private async build(consumers: readonly string[], hashes: readonly Record<string, string>[], only?: string): Promise<UsageRecordView[]> {
    const parsed = hashes.map(parseConsumerHash);
    const types = [...new Set(parsed.flatMap((p) => [...p.types.keys()]))].filter((t) => only === undefined || t === only);
    const windows = this.deps.windows ? await this.deps.windows.read(consumers, types) : undefined;
    return consumers.map((consumer, i) => {
      const { lastActive, types: perType } = parsed[i];
      const usage: TypeUsage[] = [];
      for (const [type, counts] of [...perType].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        // docs/design.md#usage-record: types with zero cumulative data are omitted.
        if ((only !== undefined && type !== only) || isEmpty(counts)) continue;
        const entry: TypeUsage = { service_type: type, total: totalsOf(counts, this.kindOf(type).llm, "llm", this.deps.priced) };
        const window = windows?.get(consumer)?.get(type);
        if (window) entry.window = windowView(window);
        usage.push(entry);
      }
      return {
        consumer,
        retention: this.deps.retention,
        ...(lastActive !== undefined ? { last_active: new Date(lastActive).toISOString() } : {}),
        usage,
      };
    });
  }
}
