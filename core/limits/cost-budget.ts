/**
 * A cost budget, whoever owns it (a consumer on a service type or model, an API
 * key): a fixed window in the KV store holding what was spent, in whole nano-units of
 * pricing.currency (core/pricing/price.ts), and a limit. The request that crosses the limit
 * passes (costs are added after the answer); later ones in the window are refused. Where
 * requests in flight hold part of the budget (the limits plugin's reservations), what they
 * hold counts as spent until their answers are counted.
 *
 * In the core so any plugin can keep a budget of its own: read the window (`GET` + `PTTL`,
 * or the limits plugin's `windowPeek`), `judgeCost`, throw `costRefusal` when refused; add
 * each priced answer's cost with `addCost`.
 */
import { formatDuration } from "../config/duration.ts";
import { errors, type GatewayError } from "../errors.ts";
import { costOfNanos } from "../pricing/price.ts";
import { windowIncrement } from "../stores/atomic-ops.ts";
import { HELD_RETRY_SECONDS } from "./budget-hold.ts";
import type { KvStore } from "../stores/kv.ts";

export interface CostBudget {
  /** The window's KV key. */
  key: string;
  /** The limit in nano-units of the currency (`toNanos(cost_rate)`). */
  limitNanos: number;
  periodMs: number;
  /** Whose budget, for the 429 message: `service type "chat"`, `model "gpt"`, `API key "k1"`. */
  scope: string;
}

export type CostDecision = { allowed: true; usedNanos: number } | { allowed: false; usedNanos: number; retryAfterSeconds: number; message: string };

/**
 * The decision from a window's reading: `value` as stored ("" or undefined when no window is
 * open), `pttlMs` its remaining ms (the whole period is used when the store reports none),
 * `heldNanos` what requests in flight hold of the budget. Refused for what is held alone, a
 * request is told to retry soon: the holds end with their requests.
 */
export function judgeCost(budget: CostBudget, value: string | number | undefined, pttlMs: number, currency: string, heldNanos = 0): CostDecision {
  const usedNanos = Number(value || 0);
  if (usedNanos + heldNanos < budget.limitNanos) return { allowed: true, usedNanos };
  if (usedNanos < budget.limitNanos) {
    return {
      allowed: false,
      usedNanos,
      retryAfterSeconds: HELD_RETRY_SECONDS,
      message: `cost budget of ${budget.scope} is held by requests in flight: ${costOfNanos(usedNanos)} spent and ${costOfNanos(heldNanos)} held of ${
        costOfNanos(budget.limitNanos)
      } ${currency} per ${formatDuration(budget.periodMs)}; retry in ${HELD_RETRY_SECONDS}s, when their answers are counted`,
    };
  }
  const retryAfter = (pttlMs > 0 ? pttlMs : budget.periodMs) / 1000;
  return {
    allowed: false,
    usedNanos,
    retryAfterSeconds: retryAfter,
    message: `cost budget of ${budget.scope} used up: ${costOfNanos(usedNanos)} of ${costOfNanos(budget.limitNanos)} ${currency} per ${
      formatDuration(budget.periodMs)
    }; retry in ${Math.ceil(retryAfter)}s, when the window resets`,
  };
}

/** The 429 (with Retry-After) of a refused decision. */
export const costRefusal = (decision: Extract<CostDecision, { allowed: false }>): GatewayError =>
  errors.budgetExceeded(decision.message, decision.retryAfterSeconds);

/** Adds a cost to a budget's window, opening it (for `periodMs`) when none is open. */
export async function addCost(kv: KvStore, budget: Pick<CostBudget, "key" | "periodMs">, nanos: number): Promise<void> {
  if (!(nanos > 0)) return;
  await kv.run(windowIncrement, [budget.key], [nanos, budget.periodMs]);
}
