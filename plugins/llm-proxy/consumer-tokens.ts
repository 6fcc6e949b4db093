/**
 * Per-consumer cumulative tokens and the top-N gauge `svc_llm_consumer_tokens_top`
 * (docs/design.md#consumer-token-tracking). On when `metrics.top_consumers > 0` and
 * `server.consumer_header` is set.
 *
 * The counts live in one KV hash, `llm:consumer_tokens`, so every replica adds to the same
 * totals and each publishes the same top N. A field is the JSON array
 * `[consumer, user_type, "prompt" | "completion"]` (unambiguous whatever the names contain);
 * its value the cumulative count. Ranking is by prompt + completion per (consumer, user type);
 * the gauge carries both types of the top N. Totals are all-time (no TTL): the gauge ranks
 * the heaviest consumers ever seen, which is what it is for.
 *
 * Counts are gathered for one turn of the event loop and added with one store operation
 * (`hashAdd`) for every response of that turn; `flush` (on close) writes what is gathered.
 */
import type { Logger } from "../../core/log.ts";
import type { Metrics } from "../../core/metrics.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { TokenUsage } from "../../core/llm/usage.ts";
import { EndOfTurnWriter } from "../../core/stores/end-of-turn.ts";
import { hashAdd } from "./ops.ts";
import { keepIfRoom } from "../../core/bounded-cache.ts";

export const CONSUMER_TOKENS_KEY = "llm:consumer_tokens";
/** docs/design.md#constants. */
export const TOP_REFRESH_MS = 60_000;

type TokenType = "prompt" | "completion";

interface Totals {
  consumer: string;
  userType: string;
  prompt: number;
  completion: number;
}

export class ConsumerTokens {
  private readonly gauge;

  constructor(
    private readonly kv: KvStore,
    metrics: Metrics,
    private readonly topN: number,
    private readonly log: Logger,
  ) {
    this.gauge = metrics.gauge({
      name: "svc_llm_consumer_tokens_top",
      help: "Cumulative LLM tokens of the top consumers (metrics.top_consumers), by user type and type",
      labelNames: ["consumer", "user_type", "type"],
      // Read from the shared store by every worker: the same value, not a share of it.
      aggregator: "max",
    });
  }

  /** The two hash fields of a (consumer, user type), built once per pair (bounded: consumers come from a header; docs/design.md#bounded-caches). */
  private readonly fields = new Map<string, { prompt: string; completion: string }>();

  private fieldsOf(consumer: string, userType: string): { prompt: string; completion: string } {
    const id = `${consumer}\u0000${userType}`;
    let found = this.fields.get(id);
    if (!found) {
      // `["consumer","user type"` once for both fields: with more consumers than the cache holds every request builds them.
      const head = JSON.stringify([consumer, userType]).slice(0, -1);
      found = keepIfRoom(this.fields, id, { prompt: `${head},"prompt"]`, completion: `${head},"completion"]` }, 10_000);
    }
    return found;
  }

  /** Tokens gathered this turn, by hash field. */
  private readonly gathered = new Map<string, number>();
  private readonly writer = new EndOfTurnWriter(() => this.writeGathered());

  /** Adds one response's tokens (written at the end of the turn). Never throws. */
  add(consumer: string, userType: string, usage: TokenUsage): void {
    const fields = this.fieldsOf(consumer, userType);
    this.gathered.set(fields.prompt, (this.gathered.get(fields.prompt) ?? 0) + usage.prompt_tokens);
    this.gathered.set(fields.completion, (this.gathered.get(fields.completion) ?? 0) + usage.completion_tokens);
    this.writer.schedule();
  }

  /** Writes what was gathered and waits for every write in flight. A store error is logged and the counts miss it. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  private writeGathered(): Promise<void> | undefined {
    if (this.gathered.size === 0) return undefined;
    const args: (string | number)[] = [];
    this.gathered.forEach((tokens, field) => args.push(field, tokens));
    this.gathered.clear();
    return this.kv.run(hashAdd, [CONSUMER_TOKENS_KEY], args).then(
      () => undefined,
      (error: unknown) => this.log.warn("consumer_tokens_not_counted", { error }),
    );
  }

  /** Republishes the gauge from the store: the top N (consumer, user type) pairs by total tokens. */
  async refresh(): Promise<void> {
    const totals = new Map<string, Totals>();
    for (const [field, value] of Object.entries(await this.kv.hgetall(CONSUMER_TOKENS_KEY))) {
      const parsed = parseField(field);
      if (!parsed) continue;
      // Header values hold no NUL: an unambiguous key without a JSON string per field.
      const key = `${parsed.consumer}\u0000${parsed.userType}`;
      const entry = totals.get(key) ?? { consumer: parsed.consumer, userType: parsed.userType, prompt: 0, completion: 0 };
      entry[parsed.type] += Number(value) || 0;
      totals.set(key, entry);
    }
    const top = topOf(totals.values(), this.topN);
    // Synchronous from here: a scrape never sees the gauge half rebuilt.
    this.gauge.reset();
    for (const entry of top) {
      this.gauge.set({ consumer: entry.consumer, user_type: entry.userType, type: "prompt" }, entry.prompt);
      this.gauge.set({ consumer: entry.consumer, user_type: entry.userType, type: "completion" }, entry.completion);
    }
  }
}

/** Heaviest first, ties by consumer name. */
const heavier = (a: Totals, b: Totals) => b.prompt + b.completion - (a.prompt + a.completion) || a.consumer.localeCompare(b.consumer);

/**
 * The first `n` of `entries` by `heavier`, kept in a list of at most `n` as they come: one
 * comparison for most entries rather than a sort of every consumer ever seen (100,000 of them
 * took that sort every refresh).
 */
function topOf(entries: Iterable<Totals>, n: number): Totals[] {
  const top: Totals[] = [];
  if (n <= 0) return top;
  for (const entry of entries) {
    if (top.length === n && heavier(entry, top[n - 1]) >= 0) continue;
    let at = top.length;
    while (at > 0 && heavier(entry, top[at - 1]) < 0) at--;
    top.splice(at, 0, entry);
    if (top.length > n) top.pop();
  }
  return top;
}

function parseField(field: string): { consumer: string; userType: string; type: TokenType } | undefined {
  try {
    const value: unknown = JSON.parse(field);
    if (!Array.isArray(value) || value.length !== 3) return undefined;
    const [consumer, userType, type] = value as unknown[];
    if (typeof consumer !== "string" || typeof userType !== "string" || (type !== "prompt" && type !== "completion")) return undefined;
    return { consumer, userType, type };
  } catch {
    return undefined;
  }
}
