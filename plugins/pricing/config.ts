/**
 * The `pricing:` section: the currency, stated once, and the price of each model, by the
 * client-facing alias (`models`) or by the model sent to the backend (`backend_models`,
 * which wins when both match). Token prices are per million tokens, `per_second` per
 * second of an async job's processing time. Hot-reloadable: a reload builds a new table.
 */
import { type Static, Type } from "@sinclair/typebox";
import { Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

const price = (description: string) => Type.Optional(Type.Number({ minimum: 0, description }));

export const ModelPriceSchema = Type.Object(
  {
    input: price("Per 1M prompt tokens that were neither read from nor written to the prompt cache"),
    output: price("Per 1M completion tokens"),
    cached_input: price("Per 1M prompt tokens read from the provider's prompt cache; default: input"),
    cache_write: price("Per 1M prompt tokens written to the provider's prompt cache; default: input"),
    per_second: price("Per second of an async job's processing time"),
  },
  { additionalProperties: false },
);

const PriceMap = (description: string) => Type.Record(Type.String(), ModelPriceSchema, { default: {}, description });

export const PricingSchema = Section(
  {
    currency: Type.String({ default: "USD", minLength: 1, description: "The currency of every price and cost (a label: nothing is converted)" }),
    models: PriceMap("Prices by model alias: {MODEL: {input, output, cached_input, cache_write, per_second}}"),
    backend_models: PriceMap("Prices by backend model (the model sent to the backend); wins over `models` when both match"),
    batch_multiplier: Type.Number({
      minimum: 0,
      default: 1,
      description: "What a batch line costs, as a multiple of the same request sent directly (providers charge 0.5 for batches)",
    }),
  },
  "Prices of models: cost in usage, metrics and dollar budgets",
  "See [Cost](cost.md). A model priced in neither map costs nothing and is counted in `svc_cost_unpriced_total`. `batch_multiplier` applies to the lines of [batches](batches.md): their cost in usage, metrics and dollar budgets.",
);

export type ModelPrice = Static<typeof ModelPriceSchema>;
export type PricingConfig = Static<typeof PricingSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    pricing: PricingConfig;
  }
  interface ConfigFacts {
    /** Some model has a price (and the pricing plugin, with its `pricing` service, is on). */
    pricingOn: boolean;
  }
}

export const pricingSection: ConfigSection<typeof PricingSchema> = {
  key: "pricing",
  schema: PricingSchema,
  validate: (pricing) =>
    (["models", "backend_models"] as const).flatMap((map) =>
      Object.entries(pricing[map])
        .filter(([, entry]) => Object.keys(entry).length === 0)
        .map(([model]) =>
          `pricing.${map}.${model}: no price set; give at least one of input, output, cached_input, cache_write, per_second (or remove the entry)`
        )
    ),
  facts: (pricing) => ({ pricingOn: pricingOn(pricing) }),
};

/** Pricing is on when some model has a price. */
export const pricingOn = (pricing: PricingConfig): boolean => Object.keys(pricing.models).length + Object.keys(pricing.backend_models).length > 0;
