/**
 * What the pricing plugin offers other plugins: the price of a request, so the LLM proxy,
 * the relay, usage and limits can put a cost on what they count without importing the
 * plugin (declared into the core's `GatewayServices` by declaration merging).
 *
 * Costs are kept as whole nano-units of the currency (1e-9) wherever they are added up
 * (usage counters, budget windows), so sums never carry float noise; they are shown as a
 * number in the currency rounded to 6 decimals (`roundCost`).
 */

/** What one request consumed, as the gateway counted it. */
export interface PricedUsage {
  /** Prompt tokens, cache reads and writes included (as the chat-completions format counts them). */
  prompt?: number;
  completion?: number;
  /** Of `prompt`: read from the provider's prompt cache. */
  cached?: number;
  /** Of `prompt`: written to the provider's prompt cache. */
  cacheCreation?: number;
  /** Processing seconds of an async job. */
  seconds?: number;
}

/** Which price applies: the backend model's when one is set, else the alias's. */
export interface PriceQuery {
  serviceType: string;
  /** The client-facing model alias (`pricing.models`). */
  model: string;
  /** The model sent to the backend (`pricing.backend_models`). */
  backendModel?: string;
}

export interface Pricing {
  /** `pricing.currency`, stated once for every price and cost. */
  readonly currency: string;
  /**
   * Prices a counted request and adds it to `svc_cost_total`, or, when no price applies,
   * to `svc_cost_unpriced_total` (with one warning per model): the cost in the currency,
   * a whole number of nano-units; undefined when unpriced (never guessed).
   */
  charge(query: PriceQuery, usage: PricedUsage): number | undefined;
  /** What `usage` would cost, counting nothing (an estimate before the answer): undefined when no price applies. */
  quote(query: PriceQuery, usage: PricedUsage): number | undefined;
}

export const NANOS_PER_UNIT = 1_000_000_000;

/** A cost as the whole nano-units its sums are kept in. */
export const toNanos = (cost: number): number => Math.round(cost * NANOS_PER_UNIT);

/** A cost as users see it: the currency, at most 6 decimals. */
export const roundCost = (cost: number): number => Math.round(cost * 1_000_000) / 1_000_000;

/** Nano-units summed in a store, as users see them. */
export const costOfNanos = (nanos: number): number => roundCost(nanos / NANOS_PER_UNIT);

/** The `X-Gateway-Cost` header: the request's cost in the currency, 6 decimals. */
export const COST_HEADER = "x-gateway-cost";
export const formatCost = (cost: number): string => cost.toFixed(6);

declare module "../plugins/types.ts" {
  interface GatewayServices {
    pricing: Pricing;
  }
}

declare module "../pipeline/context.ts" {
  interface RequestVars {
    /** The request's cost in `pricing.currency`, when it was priced (the audit line and the trace carry it). */
    cost: number;
  }
}
