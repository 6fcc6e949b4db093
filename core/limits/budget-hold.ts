/**
 * What an admitted LLM request holds of its budgets while it runs (the limits plugin's
 * reservation): its estimated tokens and cost, counted by concurrent admissions as if spent.
 * The LLM proxy hands the hold back on the request's `llm.usage` event, so the answer's count
 * replaces what was held instead of adding to it.
 */
import type { LlmUsageEvent } from "../llm/usage.ts";

/** Retry-After of a request refused for what requests in flight hold (not spent yet): they end soon. */
export const HELD_RETRY_SECONDS = 1;

export interface BudgetHold {
  /**
   * Replaces the hold with the answer's count, once: true when it does (the caller then counts
   * nothing more of this answer), false when the hold was already given back (the request ended
   * first) and the answer is to be counted as any other.
   */
  settle(event: LlmUsageEvent): boolean;
}

declare module "../pipeline/context.ts" {
  interface RequestVars {
    /** Set by the limits plugin when the request holds part of a budget. */
    budgetHold: BudgetHold;
  }
}
