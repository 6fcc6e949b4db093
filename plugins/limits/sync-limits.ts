/**
 * A sync or LLM request's request rate, token and cost budgets (spec 4.5, 8.1, 8.2; an API
 * key's cost budget too), checked with
 * one store operation (`limitsAdmit`): one round trip on Redis before the backend call
 * instead of one per check. The rate is judged first, so the 429 a request gets is the
 * same as when the checks ran one after the other.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { CostBudget } from "../../core/limits/cost-budget.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { failOpen, type LimitDeps } from "./deps.ts";
import type { Measures } from "./measures.ts";
import { limitsAdmit, windowPeek } from "./ops.ts";
import { judgeRequestRate } from "./request-rate.ts";
import { judgeTokens } from "./tokens.ts";
import { enforceCost, keyCostBudget } from "./cost.ts";

/** The checks of a request, or undefined when it has none (no store operation, no promise). */
export function checkSyncLimits(deps: LimitDeps, ctx: RequestContext, service: ServiceConfig | undefined, consumer: string): Promise<void> | undefined {
  // Token and cost budgets measure LLM requests to a known model.
  const llm = ctx.mode === "llm" && service !== undefined;
  const measures = deps.measures.of(ctx.serviceType, service?.model ?? "", ctx.principal.userType, consumer);
  const keys = llm ? measures.llmKeys : measures.syncKeys;
  // The caller's API key's own dollar budget: read alongside (in parallel), not in the same
  // operation, since on a Redis Cluster a key's windows live in their own slot.
  const keyCost = ctx.mode === "llm" ? keyCostBudget(ctx.principal.limits) : undefined;
  if (keys.length === 0 && !keyCost) return undefined;
  return admit(deps, ctx, measures, llm, keys, keyCost);
}

async function admit(deps: LimitDeps, ctx: RequestContext, measures: Measures, llm: boolean, keys: string[], keyCost: CostBudget | undefined): Promise<void> {
  const limits = measures.limits;
  const rated = limits !== undefined && limits.rate > 0;
  const budgets = llm ? measures.tokens : [];
  const costs = llm ? measures.costs : [];
  const consumerChecks = keys.length > 0;
  let reply: (string | number)[];
  let keyReply: (string | number)[] | undefined;
  try {
    // Promise.all only when there are two reads: it costs a few objects per request.
    if (keyCost) [reply, keyReply] = await Promise.all([consumerChecks ? deps.kv.run(limitsAdmit, keys, measures.admitArgs) : [], deps.kv.run(windowPeek, [keyCost.key], [])]);
    else reply = await deps.kv.run(limitsAdmit, keys, measures.admitArgs);
  } catch (error) {
    // Each check fails open on its own, as when they were separate operations.
    if (rated) failOpen(deps, "rate", "request_rate", ctx.serviceType, error);
    if (budgets.length > 0) failOpen(deps, "tokens", "token_budget", ctx.serviceType, error);
    if (costs.length > 0 || keyCost) failOpen(deps, "rate", "cost_budget", ctx.serviceType, error);
    return;
  }
  const userType = ctx.principal.userType;
  if (rated) judgeRequestRate(deps, ctx.serviceType, userType, limits, Number(reply[0]), Number(reply[1]));
  if (budgets.length > 0) judgeTokens(deps, ctx.serviceType, userType, budgets, reply, 2);
  if (consumerChecks) enforceCost(costs, reply, 2 + 2 * budgets.length, deps.currency);
  if (keyCost && keyReply) enforceCost([keyCost], keyReply, 0, deps.currency);
}
