/**
 * The limits a caller's credential carries (an API key's `limits`, core/limits/windows.ts),
 * enforced with the same fixed windows and store operations as `rate_limits`: the request
 * count is taken and the token window read in one `limitsAdmit` call, tokens are added
 * from `llm.usage`. Each measure is one row of `MEASURES`. The key's dollar budget is not
 * here: it is a cost budget (cost.ts `keyCostBudget`), read in the same round trip as the
 * consumer's cost budgets. Store errors fail open like every limit (spec 7).
 */
import { formatDuration } from "../../core/config/duration.ts";
import { errors } from "../../core/errors.ts";
import type { CredentialLimits } from "../../core/limits/windows.ts";
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import { failOpen, retryAfterSeconds, type LimitDeps } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import { limitsAdmit } from "./ops.ts";

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
    applies: () => true,
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
  // limitsAdmit counts its first key (when asked) and reads the others.
  const counted = active.find((m) => m.countedOnAdmit);
  const ordered = counted ? [counted, ...active.filter((m) => m !== counted)] : active;
  let reply: (string | number)[];
  try {
    reply = await deps.kv.run(limitsAdmit, ordered.map((m) => m.key(limits.id)), [counted ? 1 : 0, counted ? counted.periodMs(limits) : 0]);
  } catch (error) {
    for (const m of ordered) failOpen(deps, m.kind, `api_key_${m.kind}`, ctx.serviceType, error);
    return;
  }
  const label = deps.table.userTypeLabel(ctx.principal.userType);
  for (const [index, m] of ordered.entries()) {
    // The counted key's reply is at 0; limitsAdmit puts [0, 0] there when nothing is counted.
    const at = counted ? 2 * index : 2 + 2 * index;
    const used = Number(reply[at] || 0);
    const limit = m.limit(limits);
    const over = m.countedOnAdmit ? used > limit : used >= limit;
    if (!over) continue;
    if (m.kind === "rate") deps.metrics.rate(ctx.serviceType, label, "rejected", used === limit + 1);
    else deps.metrics.tokens(ctx.serviceType, label, "rejected");
    const retryAfter = retryAfterSeconds(Number(reply[at + 1]), m.periodMs(limits));
    throw errors.rateLimited(`${m.refusal(used, limit, m.periodMs(limits))}; retry in ${Math.ceil(retryAfter)}s, when the window resets`, retryAfter);
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
