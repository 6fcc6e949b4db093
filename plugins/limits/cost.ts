/**
 * Cost budgets: what priced LLM responses and async jobs cost (the `cost` of
 * `llm.usage` and `relay.processed`) accumulates per consumer in fixed windows of
 * `cost_period`, opened by the first cost, kept as whole nano-units of pricing.currency.
 * A request is checked against what earlier requests cost plus what LLM requests in flight
 * hold (hold.ts): one at a time, the one that crosses the budget passes and later ones in
 * the window get 429 with Retry-After.
 *
 * A budget is a window key and a limit (core/limits/cost-budget.ts); `checkCostBudget` (read,
 * then decide) and `enforceCost` (decide from a reading taken with other checks) take any
 * such budget, so an API key's own budget (`keyCostBudget`, its `limits.cost_rate`) uses the
 * same code: read in the same round trip as the consumer's, counted from the same events.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { CredentialLimits } from "../../core/limits/windows.ts";
import { addCost, type CostBudget, type CostDecision, costRefusal, judgeCost } from "../../core/limits/cost-budget.ts";
import { toNanos } from "../../core/pricing/price.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import { failOpen, type LimitDeps } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import { limitsAdmit, windowPeek } from "./ops.ts";
import type { LimitTable, TypeLimits } from "./table.ts";

/** Throws the 429 of the first budget in `list` a reading (from `reply[at]` on, value, pttl and held per budget, as `limitsAdmit` answers) finds used up. */
export function enforceCost(list: readonly CostBudget[], reply: readonly (string | number)[], at: number, currency: string): void {
  for (let index = 0; index < list.length; index++) {
    const reading = at + 3 * index;
    const decision = judgeCost(list[index], reply[reading], Number(reply[reading + 1]), currency, Number(reply[reading + 2]));
    if (!decision.allowed) throw costRefusal(decision);
  }
}

/** `limitsAdmit` KEYS and ARGV that judge `list` (no rate) on what was spent and is held, holding nothing. */
function judgedOnly(list: readonly CostBudget[], now: number): { keys: string[]; args: (string | number)[] } {
  const keys: string[] = [];
  const args: (string | number)[] = [0, 0, 0, now, now, ""];
  for (const budget of list) {
    keys.push(budget.key, limitKeys.held(budget.key));
    args.push(budget.limitNanos, 0);
  }
  return { keys, args };
}

/** Reads a budget's window and decides (one round trip). Store errors reach the caller. */
export async function checkCostBudget(kv: KvStore, budget: CostBudget, currency: string): Promise<CostDecision> {
  const [value, ttl] = await kv.run(windowPeek, [budget.key], []);
  return judgeCost(budget, value, Number(ttl), currency);
}

/** The model's budget (`token_limits`), then the service type's (`rate_limits`), that measure this consumer (measures.ts keeps them). */
export function costBudgets(
  table: LimitTable,
  service: Pick<ServiceConfig, "type" | "model">,
  consumer: string,
  userType: string | undefined,
  typeLimits: TypeLimits | undefined,
): CostBudget[] {
  const out: CostBudget[] = [];
  const model = service.model !== "" ? table.forModelCost(service, userType) : undefined;
  if (model) {
    out.push({
      key: limitKeys.modelCost(service.type, consumer, service.model),
      limitNanos: model.costNanos,
      periodMs: model.costPeriodMs,
      scope: `model "${service.model}"`,
    });
  }
  if (typeLimits && typeLimits.costNanos > 0) {
    out.push({
      key: limitKeys.cost(service.type, consumer),
      limitNanos: typeLimits.costNanos,
      periodMs: typeLimits.costPeriodMs,
      scope: `service type "${service.type}"`,
    });
  }
  return out;
}

/** An API key's own cost budget (its `limits.cost_rate`), any service type; none when it has no cost_rate. */
export function keyCostBudget(limits: CredentialLimits | undefined): CostBudget | undefined {
  if (!limits || !(limits.costRate > 0)) return undefined;
  return { key: limitKeys.keyCost(limits.id), limitNanos: toNanos(limits.costRate), periodMs: limits.costPeriodMs, scope: `API key "${limits.id}"` };
}

/**
 * An async submission: refused while a cost window that measures it is used up, counting
 * what LLM requests in flight hold (before the upload is read): the model's and the type's
 * when the type has `rate_limits` (`limits`), then the caller's API key's. A job's cost is
 * known only once the relay ran it, so it holds nothing itself.
 */
export async function checkAsyncCost(
  deps: LimitDeps,
  serviceType: string,
  model: string,
  consumer: string,
  userType: string | undefined,
  limits: TypeLimits | undefined,
  key: CredentialLimits | undefined,
): Promise<void> {
  const consumers = limits ? costBudgets(deps.table, { type: serviceType, model }, consumer, userType, limits) : [];
  const keyBudget = keyCostBudget(key);
  // One read per owner: on a Redis Cluster the key's window and the consumer's are in different slots.
  const groups = [consumers, keyBudget ? [keyBudget] : []].filter((group) => group.length > 0);
  if (groups.length === 0) return;
  let replies: (string | number)[][];
  try {
    const now = deps.clock.now();
    replies = await Promise.all(
      groups.map((group) => {
        const { keys, args } = judgedOnly(group, now);
        return deps.kv.run(limitsAdmit, keys, args);
      }),
    );
  } catch (error) {
    return failOpen(deps, "rate", "cost_budget", serviceType, error);
  }
  // Each reply starts with limitsAdmit's three rate fields.
  for (const [index, group] of groups.entries()) enforceCost(group, replies[index], 3, deps.currency);
}

/** An API key's cost window to count into: its id and `cost_period` (ms). */
export interface KeyCostWindow {
  id: string;
  periodMs: number;
}

/**
 * Adds a priced response's or job's cost to every budget that measures it (the crossing
 * request already passed): the consumer's, and the API key's when `key` is given.
 */
export async function countCost(
  deps: LimitDeps,
  event: { serviceType: string; model: string; consumer?: string; userType?: string; cost?: number },
  key?: KeyCostWindow,
): Promise<void> {
  if (event.cost === undefined || event.consumer === undefined || event.consumer === "") return;
  const nanos = toNanos(event.cost);
  if (!(nanos > 0)) return;
  const userType = event.userType === "" ? undefined : event.userType;
  const costs: Array<Pick<CostBudget, "key" | "periodMs">> = deps.measures.of(event.serviceType, event.model, userType, event.consumer).costs;
  const list = key ? [...costs, { key: limitKeys.keyCost(key.id), periodMs: key.periodMs }] : costs;
  try {
    await Promise.all(list.map((budget) => addCost(deps.kv, budget, nanos)));
  } catch (error) {
    failOpen(deps, "rate", "cost_count", event.serviceType, error);
  }
}
