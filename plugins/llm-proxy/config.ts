/**
 * The `llm:` section: how the LLM proxy treats its traffic. `coalesce`, `cache_key` and
 * `cache_streams` are read by the response cache (they live where the cache key is), through
 * the config, so no plugin imports another.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const LlmSchema = Section(
  {
    count_streamed_tokens: Type.Boolean({
      default: false,
      description:
        "Count the tokens a streamed answer reports (its final usage chunk, Messages usage events, local-runtime counts) in token budgets, usage records and token metrics; false = the spec's behaviour (streams count as requests only)",
    }),
    reserve_token_budgets: Type.Boolean({
      default: false,
      description:
        "Token budgets hold what each LLM request in flight may use (its prompt size plus max_tokens, or 1024 output tokens when unset) from admission until its answer is counted, so concurrent requests cannot all pass on the same room, as dollar budgets always do; false = the spec's behaviour (a request is judged by what earlier answers used)",
    }),
    stream_idle_timeout: Duration("60s", "Silence from a backend stream after its first event that ends the client's stream with an error event; 0s = no limit"),
    coalesce: Type.Boolean({
      default: true,
      description:
        "In-flight coalescing where the response cache is on: identical cacheable requests that arrive while the first is at the backend wait for its answer instead of calling the backend too",
    }),
    cache_key: Type.Union([Type.Literal("spec"), Type.Literal("full")], {
      default: "spec",
      description:
        "What the response cache keys a chat request on: spec = the spec's subset (model, messages, system, temperature, top_p, stop, tools, tool_choice), so requests that differ only in n, max_tokens, response_format, seed, logprobs or penalties share an answer; full = every field of the body, key order aside, but those that cannot change the answer (user, safety_identifier, metadata, store, prompt_cache_key, keep_alive; stream and stream_options key a stream apart)",
    }),
    cache_streams: Type.Boolean({
      default: false,
      description:
        "Where the response cache is on, store streamed answers that end complete (their events as the client got them, up to 1 MiB) and replay them as a stream to identical streamed requests; false = the spec's behaviour (streams bypass the cache)",
    }),
  },
  "LLM proxy",
  "See [Streaming](llm-proxy.md#streaming) for the stream settings, [Coalescing](llm-proxy.md#coalescing) for `coalesce`, [Cache key](llm-proxy.md#cache-key) for `cache_key`, [Streamed answers](llm-proxy.md#streamed-answers) for `cache_streams` and [Budgets under concurrency](limits.md#budgets-under-concurrency) for `reserve_token_budgets`.",
);

export type LlmConfig = Static<typeof LlmSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    llm: LlmConfig;
  }
}

export const llmSection: ConfigSection<typeof LlmSchema> = { key: "llm", schema: LlmSchema };
