/**
 * The price of one request from the `pricing` table (docs/cost.md):
 *
 *   (prompt - cached - cache_creation) x input + cached x cached_input
 *     + cache_creation x cache_write + completion x output      (per million tokens)
 *   + processing seconds x per_second
 *
 * computed in whole nano-units of the currency, rounded once, so every sum of costs is exact.
 */
import { NANOS_PER_UNIT, type PricedUsage, type PriceQuery } from "../../core/pricing/price.ts";
import type { ModelPrice, PricingConfig } from "./config.ts";

/** Nano-units per token of a per-million price. */
const PER_TOKEN = NANOS_PER_UNIT / 1_000_000;

export class PriceTable {
  private readonly models: ReadonlyMap<string, ModelPrice>;
  private readonly backendModels: ReadonlyMap<string, ModelPrice>;

  constructor(config: PricingConfig) {
    this.models = new Map(Object.entries(config.models));
    this.backendModels = new Map(Object.entries(config.backend_models));
  }

  /** The price that applies: the backend model's, else the alias's, else none. */
  priceOf(query: PriceQuery): ModelPrice | undefined {
    return (query.backendModel !== undefined ? this.backendModels.get(query.backendModel) : undefined) ?? this.models.get(query.model);
  }

  /** The cost in nano-units, or undefined when no price applies. */
  nanos(query: PriceQuery, usage: PricedUsage): number | undefined {
    const price = this.priceOf(query);
    if (!price) return undefined;
    const input = price.input ?? 0;
    const cached = Math.max(0, usage.cached ?? 0);
    const written = Math.max(0, usage.cacheCreation ?? 0);
    const fresh = Math.max(0, (usage.prompt ?? 0) - cached - written);
    const tokens = fresh * input + cached * (price.cached_input ?? input) + written * (price.cache_write ?? input) +
      (usage.completion ?? 0) * (price.output ?? 0);
    return Math.round(tokens * PER_TOKEN + (usage.seconds ?? 0) * (price.per_second ?? 0) * NANOS_PER_UNIT);
  }
}
