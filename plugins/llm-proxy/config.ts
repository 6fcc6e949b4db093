/**
 * The `llm:` section: how the LLM proxy treats its traffic. `coalesce` is read by the response
 * cache (it lives where the cache key is), through the config, so no plugin imports another.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const LlmSchema = Section(
  {
    coalesce: Type.Boolean({
      default: true,
      description:
        "In-flight coalescing where the response cache is on: identical cacheable requests that arrive while the first is at the backend wait for its answer instead of calling the backend too",
    }),
  },
  "LLM proxy",
  "See [Coalescing](llm-proxy.md#coalescing) for `coalesce`.",
);

export type LlmConfig = Static<typeof LlmSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    llm: LlmConfig;
  }
}

export const llmSection: ConfigSection<typeof LlmSchema> = { key: "llm", schema: LlmSchema };
