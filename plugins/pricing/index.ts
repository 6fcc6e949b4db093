/**
 * Pricing (docs/cost.md): the `pricing` service (core/pricing/price.ts) that puts a cost on each
 * counted LLM response and each processed async job, and the metrics `svc_cost_total` and
 * `svc_cost_unpriced_total`. On when some model has a price; runs in relay processes too
 * (the relay prices the jobs it runs). A reload builds a new table: the next request pays
 * the new price.
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { NANOS_PER_UNIT, type PricedUsage, type PriceQuery, type Pricing } from "../../core/pricing/price.ts";
import { pricingOn, pricingSection } from "./config.ts";
import { PriceTable } from "./table.ts";

export default definePlugin({
  name: "pricing",
  section: pricingSection,
  roles: ["gateway", "relay"],
  enabled: (config) => pricingOn(config.pricing),
  setup(api) {
    const section = api.config.pricing;
    const table = new PriceTable(section);
    const cost = api.metrics.counter({
      name: "svc_cost_total",
      help: `Cost of LLM responses and async jobs, in pricing.currency (${section.currency})`,
      labelNames: ["service_type", "model"],
    });
    const unpriced = api.metrics.counter({
      name: "svc_cost_unpriced_total",
      help: "Counted LLM responses and async jobs of models pricing names in neither models nor backend_models (they cost nothing)",
      labelNames: ["service_type", "model"],
    });
    const warned = new Set<string>();
    // A batch line costs batch_multiplier times the same request sent directly (the LLM proxy
    // prices it without its request at hand: the work scope says it runs for a batch).
    const priced = (query: PriceQuery, usage: PricedUsage): number | undefined => {
      const nanos = table.nanos(query, usage);
      if (nanos === undefined || section.batch_multiplier === 1 || api.originOfWork() !== "batch") return nanos;
      return Math.round(nanos * section.batch_multiplier);
    };
    const pricing: Pricing = {
      currency: section.currency,
      charge(query, usage) {
        const nanos = priced(query, usage);
        const labels = { service_type: query.serviceType, model: query.model };
        if (nanos === undefined) {
          unpriced.inc(labels);
          const id = `${query.serviceType}\n${query.model}\n${query.backendModel ?? ""}`;
          if (!warned.has(id)) {
            warned.add(id);
            api.log.warn("model_unpriced", {
              service_type: query.serviceType,
              model: query.model,
              backend_model: query.backendModel,
              message: "no price in pricing.models or pricing.backend_models: counted as costing nothing",
            });
          }
          return undefined;
        }
        const amount = nanos / NANOS_PER_UNIT;
        cost.inc(labels, amount);
        return amount;
      },
      quote(query, usage) {
        const nanos = priced(query, usage);
        return nanos === undefined ? undefined : nanos / NANOS_PER_UNIT;
      },
    };
    api.provide("pricing", pricing);
  },
});
