/**
 * Reserve, then settle. An LLM request admitted under token or cost budgets holds its estimated
 * usage (estimate.ts) in each budget it will be counted in, in the same store step as the check
 * (`limitsAdmit`), and a later admission counts what requests in flight hold as if it were
 * spent: requests sent at once can no longer all pass on the same room, while one request at a
 * time is judged as before (the one that crosses the budget passes). When the answer is counted
 * (`llm.usage`), its count replaces the holds in one step (`budgetSettle`); a request that ends
 * without a count (an error, a cache hit, an answer without usage, the client gone) gives them
 * back. Either is done before the client has its whole answer, once. A hold whose request never
 * ends (its replica crashed) is dropped by the next admission once HOLD_MS have passed.
 *
 * Dollar budgets always hold; token budgets only with `llm.reserve_token_budgets` (else they
 * keep the rule of judging by what was spent alone). A request whose answer is not counted
 * holds nothing. A request that holds anything has its whole count (every token and cost
 * window of the consumer and of its API key) written here, instead of by tokens.ts, cost.ts
 * and credential.ts.
 */
import type { BudgetHold } from "../../core/limits/budget-hold.ts";
import type { CredentialLimits } from "../../core/limits/windows.ts";
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { toNanos } from "../../core/pricing/price.ts";
import { failOpen, type LimitDeps } from "./deps.ts";
import { type Claim, claimOf } from "./estimate.ts";
import { limitKeys } from "./keys.ts";
import { budgetSettle } from "./ops.ts";

/** How long a hold lasts when its request does not end: a longer request (a long stream) is then judged without it. */
export const HOLD_MS = 10 * 60 * 1000;

/** A token or cost window and the set of holds next to it. */
export interface BudgetWindow {
  key: string;
  held: string;
  kind: "tokens" | "cost";
  periodMs: number;
}

export const budgetWindow = (key: string, kind: BudgetWindow["kind"], periodMs: number): BudgetWindow => ({ key, held: limitKeys.held(key), kind, periodMs });

/** An API key's own token and cost windows (the ones its limits set). */
function keyWindows(limits: CredentialLimits | undefined): BudgetWindow[] {
  if (!limits) return [];
  const out: BudgetWindow[] = [];
  if (limits.tokenRate > 0) out.push(budgetWindow(limitKeys.credentialTokens(limits.id), "tokens", limits.tokenPeriodMs));
  if (limits.costRate > 0) out.push(budgetWindow(limitKeys.keyCost(limits.id), "cost", limits.costPeriodMs));
  return out;
}

/** What a counted answer adds to token windows (as tokens.ts counts it). */
export const answerTokens = (event: LlmUsageEvent): number => (event.counted ? Math.round(event.prompt + event.completion) : 0);
/** What a counted answer adds to cost windows, in nano-units (as cost.ts counts it). */
export const answerNanos = (event: LlmUsageEvent): number => (event.counted && event.cost !== undefined ? toNanos(event.cost) : 0);

declare module "../../core/pipeline/context.ts" {
  interface RequestVars {
    /** The request's reservation, once decided: null when it holds nothing. */
    budgetReservation: BudgetReservation | null;
  }
}

export class BudgetReservation implements BudgetHold {
  private state: "open" | "held" | "done" = "open";
  private writing: Promise<void> | undefined;

  constructor(
    private readonly deps: LimitDeps,
    /** The hold id, unique per request: the holds' members end with it. */
    readonly id: string,
    readonly claim: Claim,
    /** The request's windows, one group per owner (the consumer's, the API key's): one store step each. */
    private readonly groups: readonly (readonly BudgetWindow[])[],
    private readonly serviceType: string,
  ) {}

  /** What this request holds of a budget of `kind` (`limitsAdmit`'s amount: -1 for a budget that does not hold). */
  amount(kind: BudgetWindow["kind"]): number {
    return kind === "cost" ? this.claim.nanos : this.deps.reserveTokenBudgets ? this.claim.tokens : -1;
  }

  /** A store step added this request's holds: they are settled or given back when it ends, whatever the answer. */
  held(ctx: RequestContext): void {
    if (this.state !== "open") return;
    this.state = "held";
    ctx.vars.budgetHold = this;
    ctx.beforeEnd(() => this.end());
  }

  settle(event: LlmUsageEvent): boolean {
    if (this.state !== "held") return false;
    this.state = "done";
    this.writing = this.write(answerTokens(event), answerNanos(event));
    return true;
  }

  /** The request ended: its holds are given back unless its count replaced them (awaited then). */
  private end(): Promise<void> | undefined {
    if (this.state === "held") {
      this.state = "done";
      this.writing = this.write(0, 0);
    }
    return this.writing;
  }

  private write(tokens: number, nanos: number): Promise<void> {
    const steps = this.groups.map((group) => {
      const keys: string[] = [];
      const args: (string | number)[] = [];
      for (const window of group) {
        const tokenWindow = window.kind === "tokens";
        keys.push(window.key, window.held);
        args.push(`${tokenWindow ? this.claim.tokens : this.claim.nanos}:${this.id}`, tokenWindow ? tokens : nanos, window.periodMs);
      }
      return this.deps.kv.run(budgetSettle, keys, args).then(undefined, (error: unknown) => {
        failOpen(this.deps, group.some((window) => window.kind === "tokens") ? "tokens" : "rate", "budget_settle", this.serviceType, error);
      });
    });
    return Promise.all(steps).then(() => undefined);
  }
}

/**
 * The request's reservation, built the first time a check asks (the consumer's and the API
 * key's checks share it): none unless it is an LLM request whose answer will be counted and
 * some budget it is measured by holds.
 */
export function reservationFor(deps: LimitDeps, ctx: RequestContext): BudgetReservation | undefined {
  const known = ctx.vars.budgetReservation;
  if (known !== undefined) return known ?? undefined;
  const service = ctx.service;
  let reservation: BudgetReservation | null = null;
  if (ctx.mode === "llm" && service) {
    const consumer = ctx.principal.consumer;
    const consumerWindows = consumer !== undefined ? deps.measures.of(ctx.serviceType, service.model, ctx.principal.userType, consumer).windows : [];
    const groups = [consumerWindows, keyWindows(ctx.principal.limits)].filter((group) => group.length > 0);
    const holds = groups.some((group) => group.some((window) => window.kind === "cost" || deps.reserveTokenBudgets));
    const claim = holds ? claimOf(deps, ctx, service) : undefined;
    if (claim) reservation = new BudgetReservation(deps, deps.newId(), claim, groups, ctx.serviceType);
  }
  ctx.vars.budgetReservation = reservation;
  return reservation ?? undefined;
}

/** What a request without a reservation holds of a budget of `kind`: nothing, judged by its budget's rule. */
export const noHold = (deps: LimitDeps, kind: BudgetWindow["kind"]): number => (kind === "cost" || deps.reserveTokenBudgets ? 0 : -1);
