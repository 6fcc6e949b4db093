/**
 * The `llm:` section: how the LLM proxy treats its traffic. Other plugins add their own fields to
 * it (the response cache's `coalesce`, `cache_key` and `cache_streams`, the limits'
 * `reserve_token_budgets`); what they need of this section they get from the `llm` service.
 * Also `metrics.top_consumers`, this plugin's field in the core's `metrics` section.
 */
import { type Static, Type } from "@sinclair/typebox";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection, SectionFieldSet } from "../../core/config/schema.ts";

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
