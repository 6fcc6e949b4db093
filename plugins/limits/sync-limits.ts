/**
 * A sync or LLM request's request rate, token and cost budgets (an API key's cost budget
 * too), checked with one store operation (`limitsAdmit`): one round trip on Redis before the
 * backend call instead of one per check. The rate is judged first, so the 429 a request gets
 * is the same as when the checks ran one after the other. An LLM request whose budgets hold
 * takes its holds in the same operation (hold.ts).
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { CostBudget } from "../../core/limits/cost-budget.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { failOpen, type LimitDeps } from "./deps.ts";
import { type BudgetReservation, HOLD_MS, noHold, reservationFor } from "./hold.ts";
import { limitKeys } from "./keys.ts";
import type { Measures } from "./measures.ts";
import { limitsAdmit } from "./ops.ts";
import { judgeRequestRate } from "./request-rate.ts";
import { judgeTokens } from "./tokens.ts";
import { enforceCost, keyCostBudget } from "./cost.ts";

type Reply = (string | number)[];

/** The checks of a request, or undefined when it has none (no store operation, no promise). */
export function checkSyncLimits(deps: LimitDeps, ctx: RequestContext, service: ServiceConfig | undefined, consumer: string): Promise<void> | undefined {
  // Token and cost budgets measure LLM requests to a known model.
  const llm = ctx.mode === "llm" && service !== undefined;
  // A batch line is held to its owner's token and dollar budgets, not to the request rate.
  const measures = (ctx.origin === "batch" ? deps.measures.withoutRate : deps.measures.of).call(
    deps.measures,
    ctx.serviceType,
    service?.model ?? "",
    ctx.principal.userType,
    consumer,
  );
  const keys = llm ? measures.llmKeys : measures.syncKeys;
  // The caller's API key's own dollar budget: checked alongside (in parallel), not in the same
  // operation, since on a Redis Cluster a key's windows live in their own slot.
  const keyCost = ctx.mode === "llm" ? keyCostBudget(ctx.principal.limits) : undefined;
  if (keys.length === 0 && !keyCost) return undefined;
  return admit(deps, ctx, measures, llm, keys, keyCost);
}

/** `limitsAdmit` ARGV of an LLM request: the rate's, then the holds' time, deadline and id, then each budget's limit and hold. */
function budgetArgs(deps: LimitDeps, measures: Measures, reservation: BudgetReservation | undefined, now: number): Reply {
  const args: Reply = [...measures.admitArgs, now, now + HOLD_MS, reservation?.id ?? ""];
  const tokens = reservation ? reservation.amount("tokens") : noHold(deps, "tokens");
  const cost = reservation ? reservation.amount("cost") : noHold(deps, "cost");
  for (const budget of measures.tokens) args.push(budget.rate, tokens);
  for (const budget of measures.costs) args.push(budget.limitNanos, cost);
  return args;
}

/** A store operation's reply, or its failure: both operations are read before anything is judged. */
const settled = (run: Promise<Reply>): Promise<Reply | Error> =>
  run.then(undefined, (error: unknown) => (error instanceof Error ? error : new Error(String(error))));

async function admit(deps: LimitDeps, ctx: RequestContext, measures: Measures, llm: boolean, keys: string[], keyCost: CostBudget | undefined): Promise<void> {
  const limits = measures.limits;
  const rated = limits !== undefined && limits.rate > 0;
  const budgets = llm ? measures.tokens : [];
  const costs = llm ? measures.costs : [];
  const consumerChecks = keys.length > 0;
  // Only a request with a token or cost budget may hold (a rate-only one builds nothing).
  const reservation = llm && (measures.windows.length > 0 || keyCost) ? reservationFor(deps, ctx) : undefined;
  const now = llm ? deps.clock.now() : 0;
  const args = llm && measures.windows.length > 0 ? budgetArgs(deps, measures, reservation, now) : measures.admitArgs;
  let reply: Reply | Error = [];
  let keyReply: Reply | Error | undefined;
  if (keyCost) {
    // Both replies are read even when one fails: the other may have taken holds to give back.
    const keyArgs = [0, 0, 0, now, now + HOLD_MS, reservation?.id ?? "", keyCost.limitNanos, reservation ? reservation.amount("cost") : 0];
    [reply, keyReply] = await Promise.all([
      consumerChecks ? settled(deps.kv.run(limitsAdmit, keys, args)) : [],
      settled(deps.kv.run(limitsAdmit, [keyCost.key, limitKeys.held(keyCost.key)], keyArgs)),
    ]);
  } else {
    try {
      reply = await deps.kv.run(limitsAdmit, keys, args);
    } catch (error) {
      reply = error instanceof Error ? error : new Error(String(error));
    }
  }
  // Holds taken are given back when the request ends, whatever refuses it from here on.
  if (reservation && ((Array.isArray(reply) && reply[2] === 1) || (Array.isArray(keyReply) && keyReply[2] === 1))) reservation.held(ctx);

  if (reply instanceof Error) {
    // Each check fails open on its own, as when they were separate operations.
    if (rated) failOpen(deps, "rate", "request_rate", ctx.serviceType, reply);
    if (budgets.length > 0) failOpen(deps, "tokens", "token_budget", ctx.serviceType, reply);
    if (costs.length > 0) failOpen(deps, "rate", "cost_budget", ctx.serviceType, reply);
  } else if (consumerChecks) {
    const userType = ctx.principal.userType;
    if (rated) judgeRequestRate(deps, ctx.serviceType, userType, limits, Number(reply[0]), Number(reply[1]));
    if (budgets.length > 0) judgeTokens(deps, ctx.serviceType, userType, budgets, reply, 3);
    enforceCost(costs, reply, 3 + 3 * budgets.length, deps.currency);
  }
  if (keyCost && keyReply) {
    if (keyReply instanceof Error) failOpen(deps, "rate", "cost_budget", ctx.serviceType, keyReply);
    else enforceCost([keyCost], keyReply, 3, deps.currency);
  }
}
