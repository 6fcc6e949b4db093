/**
 * The `llm:` section: how the LLM proxy treats its traffic. Other plugins add their own fields to
 * it (the response cache's `coalesce`, `cache_key` and `cache_streams`, the limits'
 * `reserve_token_budgets`); what they need of this section they get from the `llm` service.
 * Also `metrics.top_consumers`, this plugin's field in the core's `metrics` section.
 */
import { type Static, Type } from "@sinclair/typebox";
import { Duration, Section, StringList } from "../../core/config/schema-parts.ts";
import type { ConfigSection, SectionFieldSet, ServiceConfig, ServiceFieldSet } from "../../core/config/schema.ts";

export const LlmSchema = Section(
  {
    count_streamed_tokens: Type.Boolean({
      default: false,
      description:
        "Count the tokens a streamed answer reports (its final usage chunk, Messages usage events, local-runtime counts) in token budgets, usage records and token metrics; false = the spec's behaviour (streams count as requests only)",
    }),
    stream_idle_timeout: Duration(
      "60s",
      "Silence from a backend stream after its first event that ends the client's stream with an error event; 0s = no limit",
    ),
  },
  "LLM proxy",
  "See [Streaming](llm-proxy.md#streaming) for the stream settings.",
);

export type LlmConfig = Static<typeof LlmSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    llm: LlmConfig;
  }
}

export const llmSection: ConfigSection<typeof LlmSchema> = { key: "llm", schema: LlmSchema };

export const TopConsumersFields = Type.Object({
  top_consumers: Type.Integer({ minimum: 0, default: 0, description: "Size of the top-consumer token gauge; 0 = off" }),
});

/** `metrics.top_consumers`: read at start (the gauge and its refresh task are set up once). */
export const topConsumersFields: SectionFieldSet<typeof TopConsumersFields> = {
  section: "metrics",
  schema: TopConsumersFields,
  restartOnly: ["top_consumers"],
};

export const FallbackServiceFields = Type.Object({
  fallbacks: StringList(
    "Model aliases tried in order when every backend of this model failed (a network error or a failover status); the caller must be allowed to use them",
  ),
  context_window_fallbacks: StringList(
    "Model aliases tried in order when the backend answers that the prompt does not fit the model's context window",
  ),
});

declare module "../../core/config/schema.ts" {
  interface ServiceFields extends Static<typeof FallbackServiceFields> {}
}

/** The LLM service a fallback alias names: of the same service type first, else any LLM service with that alias. */
export function fallbackService(services: readonly ServiceConfig[], from: ServiceConfig, alias: string): ServiceConfig | undefined {
  const llm = services.filter((s) => s.provider !== "" && s.model === alias);
  return llm.find((s) => s.type === from.type) ?? llm[0];
}

export const fallbackServiceFields: ServiceFieldSet<typeof FallbackServiceFields> = {
  schema: FallbackServiceFields,
  validate(service, at, config) {
    const problems: string[] = [];
    for (const key of ["fallbacks", "context_window_fallbacks"] as const) {
      const aliases = service[key] ?? [];
      if (aliases.length > 0 && service.provider === "") problems.push(`${at}.${key}: only an LLM service (one with a provider) has fallbacks`);
      aliases.forEach((alias, i) => {
        if (alias === service.model) problems.push(`${at}.${key}[${i}]: "${alias}" is this service's own model`);
        else if (!fallbackService(config.services, service, alias)) problems.push(`${at}.${key}[${i}]: "${alias}" is not the model of any LLM service`);
      });
    }
    return problems;
  },
};
