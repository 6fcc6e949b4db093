/**
 * A sync or LLM request's request rate, token and cost budgets (spec 4.5, 8.1, 8.2; an API
 * key's cost budget too), checked with
 * one store operation (`limitsAdmit`): one round trip on Redis before the backend call
 * instead of one per check. The rate is judged first, so the 429 a request gets is the
 * same as when the checks ran one after the other.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { failOpen, type LimitDeps } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import { limitsAdmit, windowPeek } from "./ops.ts";
import { judgeRequestRate } from "./request-rate.ts";
import { judgeTokens, tokenBudgets } from "./tokens.ts";
import { costBudgets, enforceCost, keyCostBudget } from "./cost.ts";

export async function checkSyncLimits(deps: LimitDeps, ctx: RequestContext, service: ServiceConfig | undefined, consumer: string): Promise<void> {
  const userType = ctx.principal.userType;
  const limits = deps.table.forType(ctx.serviceType, userType);
  const rated = limits !== undefined && limits.rate > 0;
  const budgets = ctx.mode === "llm" && service ? tokenBudgets(deps, service, consumer, userType, limits) : [];
  const costs = ctx.mode === "llm" && service ? costBudgets(deps, service, consumer, userType, limits) : [];
  // The caller's API key's own dollar budget: read alongside (in parallel), not in the same
  // operation, since on a Redis Cluster a key's windows live in their own slot.
  const keyCost = ctx.mode === "llm" ? keyCostBudget(ctx.principal.limits) : undefined;
  if (!rated && budgets.length === 0 && costs.length === 0 && !keyCost) return;
  const keys = rated ? [limitKeys.rate(ctx.serviceType, consumer)] : [];
  for (const budget of budgets) keys.push(budget.key);
  for (const budget of costs) keys.push(budget.key);
  const consumerChecks = rated || budgets.length > 0 || costs.length > 0;
  let reply: (string | number)[];
  let keyReply: (string | number)[] | undefined;
  try {
    [reply, keyReply] = await Promise.all([
      consumerChecks ? deps.kv.run(limitsAdmit, keys, [rated ? 1 : 0, rated ? limits.periodMs : 0]) : [],
      keyCost ? deps.kv.run(windowPeek, [keyCost.key], []) : undefined,
    ]);
  } catch (error) {
    // Each check fails open on its own, as when they were separate operations.
    if (rated) failOpen(deps, "rate", "request_rate", ctx.serviceType, error);
    if (budgets.length > 0 && service) failOpen(deps, "tokens", "token_budget", service.type, error);
    if (costs.length > 0 || keyCost) failOpen(deps, "rate", "cost_budget", ctx.serviceType, error);
    return;
  }
  if (rated) judgeRequestRate(deps, ctx.serviceType, userType, limits, Number(reply[0]), Number(reply[1]));
  if (budgets.length > 0 && service) judgeTokens(deps, service.type, userType, budgets, reply, 2);
  if (consumerChecks) enforceCost(costs, reply, 2 + 2 * budgets.length, deps.currency);
  if (keyCost && keyReply) enforceCost([keyCost], keyReply, 0, deps.currency);
}
