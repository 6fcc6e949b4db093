/**
 * The limits of one config, resolved once when the runtime is built (hot reload builds a
 * new table), so a request only does map lookups: `rate_limits[type][user type]` with the
 * `"*"` fallback (docs/design.md#request-rate), and each model's `token_limits[user type]` with the
 * same fallback. Durations are converted to milliseconds here, never per request.
 */
import { durationMs } from "../../core/config/duration.ts";
import type { GatewayConfig, ServiceConfig } from "../../core/config/schema.ts";
import { toNanos } from "../../core/pricing/price.ts";
import type { RateLimitConfig } from "./config.ts";

export const FALLBACK = "*";

/** One `rate_limits[type][entry]`, ready to use. A 0 limit is off. */
export interface TypeLimits {
  /** The entry's name: the user type, or "*". */
  entry: string;
  rate: number;
  periodMs: number;
  tokenRate: number;
  tokenPeriodMs: number;
  maxConcurrent: number;
  processingTime: number;
  processingPeriodMs: number;
  /** The cost budget in nano-units of pricing.currency (core/pricing/price.ts). */
  costNanos: number;
  costPeriodMs: number;
}

export interface ModelTokenLimit {
  entry: string;
  tokenRate: number;
  tokenPeriodMs: number;
  costNanos: number;
  costPeriodMs: number;
}

/**
 * A window of "0s" would expire as it opens and never limit anything; the schema's default
 * length applies instead (a limit that is set is meant to bite). The config loader refuses
 * it in `rate_limits`, but not in `services[].token_limits`.
 */
const windowMs = (text: string, fallback: string) => durationMs(text) || durationMs(fallback);

function resolveEntry(entry: string, limits: RateLimitConfig): TypeLimits {
  return {
    entry,
    rate: limits.rate,
    periodMs: windowMs(limits.period, "1m"),
    tokenRate: limits.token_rate,
    tokenPeriodMs: windowMs(limits.token_period, "1m"),
    maxConcurrent: limits.max_concurrent,
    processingTime: limits.processing_time,
    processingPeriodMs: windowMs(limits.processing_period, "1h"),
    costNanos: toNanos(limits.cost_rate),
    costPeriodMs: windowMs(limits.cost_period, "24h"),
  };
}

/** The entry a user type falls to: its own, else "*", else none (docs/design.md#request-rate). */
function pick<T>(entries: ReadonlyMap<string, T> | undefined, userType: string | undefined): T | undefined {
  if (!entries) return undefined;
  return (userType !== undefined ? entries.get(userType) : undefined) ?? entries.get(FALLBACK);
}

const modelId = (type: string, model: string) => `${type}\n${model}`;

export class LimitTable {
  private readonly types = new Map<string, Map<string, TypeLimits>>();
  private readonly modelTokens = new Map<string, Map<string, ModelTokenLimit>>();
  /** Every user type the limits config names (any service type, any model), "*" excluded. */
  private readonly namedUserTypes = new Set<string>();

  constructor(config: Pick<GatewayConfig, "rate_limits" | "services">) {
    for (const [type, entries] of Object.entries(config.rate_limits)) {
      const resolved = new Map<string, TypeLimits>();
      for (const [entry, limits] of Object.entries(entries)) {
        resolved.set(entry, resolveEntry(entry, limits));
        if (entry !== FALLBACK) this.namedUserTypes.add(entry);
      }
      if (resolved.size > 0) this.types.set(type, resolved);
    }
    for (const service of config.services) {
      const resolved = new Map<string, ModelTokenLimit>();
      // Entries with token_rate 0 are kept: like `rate: 0`, they make that user type unlimited
      // instead of falling back to "*".
      for (const [entry, limits] of Object.entries(service.token_limits)) {
        resolved.set(entry, {
          entry,
          tokenRate: limits.token_rate,
          tokenPeriodMs: windowMs(limits.token_period, "1m"),
          costNanos: toNanos(limits.cost_rate),
          costPeriodMs: windowMs(limits.cost_period, "24h"),
        });
        if (entry !== FALLBACK) this.namedUserTypes.add(entry);
      }
      if (resolved.size > 0) this.modelTokens.set(modelId(service.type, service.model), resolved);
    }
  }

  /** The `rate_limits` entry measuring this user type on this service type, if any. */
  forType(type: string, userType: string | undefined): TypeLimits | undefined {
    return pick(this.types.get(type), userType);
  }

  /** The model-level token budget of a service for this user type, if any. */
  forModel(service: Pick<ServiceConfig, "type" | "model">, userType: string | undefined): ModelTokenLimit | undefined {
    const limit = pick(this.modelTokens.get(modelId(service.type, service.model)), userType);
    return limit && limit.tokenRate > 0 ? limit : undefined;
  }

  /** The model-level cost budget of a service for this user type, if any (the same entry as its token budget). */
  forModelCost(service: Pick<ServiceConfig, "type" | "model">, userType: string | undefined): ModelTokenLimit | undefined {
    const limit = pick(this.modelTokens.get(modelId(service.type, service.model)), userType);
    return limit && limit.costNanos > 0 ? limit : undefined;
  }

  /**
   * Whether a service may have budgets of its own (`token_limits`) for this user type, by the
   * two lookups the budgets are built from: only then can a consumer's measures on it differ
   * from those on the other models of its type (measures.ts).
   */
  hasModelBudgets(service: Pick<ServiceConfig, "type" | "model">, userType: string | undefined): boolean {
    if (this.modelTokens.size === 0) return false;
    return this.forModel(service, userType) !== undefined || this.forModelCost(service, userType) !== undefined;
  }

  /**
   * The `user_type` label of the limit metrics: the caller's user type when the limits config
   * names it (a key of any `rate_limits` type or `token_limits` model), even where this
   * service type measures it by "*"; otherwise "*" (no user type, or one the config does not
   * name: such callers are measured by the "*" entry). The values are bounded by the config,
   * never by what callers send in the user type header.
   */
  userTypeLabel(userType: string | undefined): string {
    return userType !== undefined && this.namedUserTypes.has(userType) ? userType : FALLBACK;
  }

  /** The service types that have a `rate_limits` entry. */
  get limitedTypes(): readonly string[] {
    return [...this.types.keys()];
  }
}
