/**
 * The `limitWindows` service: a consumer's live fixed windows for `GET /usage`
 * (`usage[].window` in docs/design.md#usage-record), read with `windowPeek`, one call per consumer
 * (in parallel). A window that is not live (never opened, expired, or its type has no `rate_limits`
 * entry) is absent.
 */
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import { costOfNanos } from "../../core/pricing/price.ts";
import { limitKeys } from "./keys.ts";
import { windowPeek } from "./ops.ts";
import type { LimitTable } from "./table.ts";
import type { LimitWindow, LimitWindows } from "../../core/limits/windows.ts";

/** The counters one window entry reads, in `windowPeek` order. */
const COUNTERS = [limitKeys.rate, limitKeys.tokens, limitKeys.processingTime, limitKeys.cost] as const;

export function limitWindows(kv: KvStore, clock: Clock, log: Logger, table: LimitTable): LimitWindows {
  const limited = new Set(table.limitedTypes);
  return {
    async read(consumers, types) {
      const result = new Map<string, Map<string, LimitWindow>>();
      const wanted = types.filter((type) => limited.has(type));
      if (consumers.length === 0 || wanted.length === 0) return result;
      const pairs = consumers.flatMap((consumer) => wanted.map((type) => ({ consumer, type })));
      let reply: (string | number)[];
      try {
        // One read per consumer: on a Redis Cluster each consumer's windows share a slot, not the consumers'.
        const replies = await Promise.all(
          consumers.map((consumer) => kv.run(windowPeek, wanted.flatMap((type) => COUNTERS.map((key) => key(type, consumer))), [])),
        );
        reply = replies.flat();
      } catch (error) {
        log.warn("limit_windows_unavailable", { error, message: "usage answered without windows" });
        return result;
      }
      const now = clock.now();
      pairs.forEach(({ consumer, type }, index) => {
        const at = index * COUNTERS.length * 2;
        const read = (counter: number): { value: number; resetAt?: number } | undefined => {
          const text = reply[at + 2 * counter];
          if (text === "" || text === undefined) return undefined;
          const ttl = Number(reply[at + 2 * counter + 1]);
          return { value: Number(text), resetAt: ttl >= 0 ? now + ttl : undefined };
        };
        const [requests, tokens, seconds, cost] = [read(0), read(1), read(2), read(3)];
        const resetAt = requests?.resetAt ?? tokens?.resetAt ?? seconds?.resetAt ?? cost?.resetAt;
        if (resetAt === undefined) return;
        const window: LimitWindow = { resetAt };
        if (requests) window.requests = requests.value;
        if (tokens) window.tokens = tokens.value;
        if (seconds) window.processingSeconds = seconds.value;
        if (cost) window.cost = costOfNanos(cost.value);
        const perType = result.get(consumer) ?? new Map<string, LimitWindow>();
        perType.set(type, window);
        result.set(consumer, perType);
      });
      return result;
    },
  };
}
