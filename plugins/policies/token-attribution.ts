/**
 * Which group token budget an `llm.usage` event counts against. The event names the
 * consumer, service type and model but not the caller's groups, so the rule that allowed
 * the request cannot be decided again from it. Instead the limits stage registers each
 * in-flight LLM request that has a token quota under (consumer, service type, model), and
 * the event, which the LLM proxy emits while that request is still in flight, looks it up.
 * Requests with the same key are allowed by the same rule for the same principal, so any
 * of them names the right budget. Entries leave with the request (a `defer`).
 */
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import type { QuotaTarget } from "./quotas.ts";

interface Entry {
  target: QuotaTarget;
  inflight: number;
}

const keyOf = (consumer: string, serviceType: string, model: string) => `${consumer}\u0000${serviceType}\u0000${model}`;

export class TokenAttribution {
  private readonly entries = new Map<string, Entry>();

  /** Registers an in-flight request; call the returned function when it has finished. */
  enter(consumer: string, serviceType: string, model: string, target: QuotaTarget): () => void {
    const key = keyOf(consumer, serviceType, model);
    const entry = this.entries.get(key);
    if (entry) {
      entry.target = target;
      entry.inflight++;
    } else {
      this.entries.set(key, { target, inflight: 1 });
    }
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const current = this.entries.get(key);
      if (current && --current.inflight <= 0) this.entries.delete(key);
    };
  }

  /** The budget a usage event counts against, if its request had one. */
  targetOf(event: Pick<LlmUsageEvent, "consumer" | "serviceType" | "model">): QuotaTarget | undefined {
    return this.entries.get(keyOf(event.consumer, event.serviceType, event.model))?.target;
  }

  get size(): number {
    return this.entries.size;
  }
}
