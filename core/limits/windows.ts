/**
 * What the limits plugin offers other plugins: the live windows of a consumer's limits
 * (the usage plugin shows them in `GET /usage`, `usage[].window` in docs/design.md#usage-record),
 * declared into the core's `GatewayServices` by declaration merging.
 */

/** The current fixed windows of one consumer on one service type; a field is absent when its window is not live. */
export interface LimitWindow {
  requests?: number;
  tokens?: number;
  processingSeconds?: number;
  /** Cost in the cost budget's window, in pricing.currency. */
  cost?: number;
  /** When the window expires (ms since the epoch): the request window's, else the token one's, else the processing one's, else the cost one's. */
  resetAt: number;
}

export interface LimitWindows {
  /**
   * The live windows of each consumer on each of `types`, in one store round trip:
   * consumer -> service type -> window (types without a live window are absent).
   * Never throws: a store error is logged and answered with no windows.
   */
  read(consumers: readonly string[], types: readonly string[]): Promise<Map<string, Map<string, LimitWindow>>>;
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    limitWindows: LimitWindows;
  }
}

/**
 * Limits that come with the caller's credential (a gateway API key, `auth.mode: api_key`),
 * measured per credential on top of the config's `rate_limits`, with the same fixed windows
 * (the limits plugin enforces them). A 0 rate is off. The dollar budget is a cost budget
 * (core/limits/cost-budget.ts) of its own, checked and counted with the consumer's.
 */
export interface CredentialLimits {
  /** Whose windows these are: the key's id (stable across rotation). */
  id: string;
  rate: number;
  periodMs: number;
  tokenRate: number;
  tokenPeriodMs: number;
  /** The dollar budget (`limits.cost_rate`), in pricing.currency; 0 = none. */
  costRate: number;
  costPeriodMs: number;
}
