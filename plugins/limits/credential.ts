/**
 * The limits a caller's credential carries (an API key's `limits`, core/limits/windows.ts),
 * enforced with the same fixed windows and store operations as `rate_limits`: the request
 * count is taken and the token window read (with `llm.reserve_token_budgets`, the request's
 * tokens held, hold.ts) in one `limitsAdmit` call, tokens are added from `llm.usage`. Each
 * measure is one row of `MEASURES`. The key's dollar budget is not here: it is a cost budget
 * (cost.ts `keyCostBudget`), read in the same round trip as the consumer's cost budgets.
 * Store errors fail open like every limit.
 */
import { formatDuration } from "../../core/config/duration.ts";
import { errors } from "../../core/errors.ts";
import type { CredentialLimits } from "../../core/limits/windows.ts";
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import { failOpen, type LimitDeps, retryAfterSeconds } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import { HOLD_MS, noHold, reservationFor } from "./hold.ts";
import { limitsAdmit } from "./ops.ts";
import { tokenRefusal } from "./tokens.ts";

interface Measure {
  kind: "rate" | "tokens";
  /** Counted when the request is admitted (requests), or after the answer (tokens). */
  countedOnAdmit: boolean;
  key(id: string): string;
  limit(limits: CredentialLimits): number;
  periodMs(limits: CredentialLimits): number;
  /** Whether the measure applies to this request (tokens: LLM requests only). */
  applies(ctx: RequestContext): boolean;
  refusal(used: number, limit: number, periodMs: number): string;
}

const MEASURES: readonly Measure[] = [
  {
    kind: "rate",
    countedOnAdmit: true,
    key: limitKeys.credentialRate,
    limit: (l) => l.rate,
    periodMs: (l) => l.periodMs,
    // A batch line is held to the key's budgets, not to its request rate.
    applies: (ctx) => ctx.origin !== "batch",
    refusal: (_used, limit, periodMs) => `request rate limit of this API key reached: ${limit} requests per ${formatDuration(periodMs)}`,
  },
  {
    kind: "tokens",
    countedOnAdmit: false,
    key: limitKeys.credentialTokens,
    limit: (l) => l.tokenRate,
    periodMs: (l) => l.tokenPeriodMs,
    applies: (ctx) => ctx.mode === "llm",
    refusal: (used, limit, periodMs) => `token budget of this API key used up: ${used} of ${limit} tokens per ${formatDuration(periodMs)}`,
  },
];

/** Admits a request under its credential's limits, or throws the 429 of the first one reached. */
export async function checkCredentialLimits(deps: LimitDeps, ctx: RequestContext, limits: CredentialLimits): Promise<void> {
  const active = MEASURES.filter((m) => m.limit(limits) > 0 && m.applies(ctx));
  if (active.length === 0) return;
  // limitsAdmit counts its first key (when asked) and judges the others as budgets.
  const counted = active.find((m) => m.countedOnAdmit);
  const budgets = active.filter((m) => m !== counted);
  const reservation = budgets.length > 0 ? reservationFor(deps, ctx) : undefined;
  const keys = counted ? [counted.key(limits.id)] : [];
  const now = deps.clock.now();
  const args: (string | number)[] = [counted ? 1 : 0, counted ? counted.periodMs(limits) : 0, counted ? counted.limit(limits) : 0];
  if (budgets.length > 0) args.push(now, now + HOLD_MS, reservation?.id ?? "");
  for (const m of budgets) {
    keys.push(m.key(limits.id), limitKeys.held(m.key(limits.id)));
    args.push(m.limit(limits), reservation ? reservation.amount("tokens") : noHold(deps, "tokens"));
  }
  let reply: (string | number)[];
  try {
    reply = await deps.kv.run(limitsAdmit, keys, args);
  } catch (error) {
    for (const m of active) failOpen(deps, m.kind, `api_key_${m.kind}`, ctx.serviceType, error);
    return;
  }
  // Holds taken are given back when the request ends, whatever refuses it from here on.
  if (reservation && reply[2] === 1) reservation.held(ctx);
  const label = deps.table.userTypeLabel(ctx.principal.userType);
  if (counted) {
    const used = Number(reply[0]);
    const limit = counted.limit(limits);
    if (used > limit) {
      deps.metrics.rate(ctx.serviceType, label, "rejected", used === limit + 1);
      const retryAfter = retryAfterSeconds(Number(reply[1]), counted.periodMs(limits));
      throw errors.rateLimitExceeded(
        `${counted.refusal(used, limit, counted.periodMs(limits))}; retry in ${Math.ceil(retryAfter)}s, when the window resets`,
        retryAfter,
      );
    }
  }
  for (const [index, m] of budgets.entries()) {
    // limitsAdmit answers the rate's count, its window and whether it held, then value, pttl and held per budget.
    const at = 3 + 3 * index;
    const used = Number(reply[at] || 0);
    const held = Number(reply[at + 2] || 0);
    const limit = m.limit(limits);
    if (used + held < limit) continue;
    deps.metrics.tokens(ctx.serviceType, label, "rejected");
    if (used < limit) throw tokenRefusal("this API key", used, held, limit, m.periodMs(limits), Number(reply[at + 1]));
    const retryAfter = retryAfterSeconds(Number(reply[at + 1]), m.periodMs(limits));
    throw errors.budgetExceeded(`${m.refusal(used, limit, m.periodMs(limits))}; retry in ${Math.ceil(retryAfter)}s, when the window resets`, retryAfter);
  }
}

/** Adds a response's tokens to its credential's token window. */
export async function countCredentialTokens(deps: LimitDeps, event: LlmUsageEvent): Promise<void> {
  const limits = event.credential;
  if (!limits || !event.counted) return;
  const tokens = Math.round(event.prompt + event.completion);
  const measures = MEASURES.filter((m) => !m.countedOnAdmit && m.limit(limits) > 0);
  if (!(tokens > 0) || measures.length === 0) return;
  try {
    await Promise.all(measures.map((m) => deps.kv.run(windowIncrement, [m.key(limits.id)], [tokens, m.periodMs(limits)])));
  } catch (error) {
    failOpen(deps, "tokens", "api_key_token_count", event.serviceType, error);
  }
}
