/**
 * The LLM proxy: a sync mode that takes `POST /v1/*` JSON requests for services with a
 * `provider`, registered with the sync proxy, which owns the routes, reads the body and
 * resolves the model. Providers and client protocols come from the registries of the
 * `providers` plugin; the response cache is used when the `response-cache` plugin is on. On
 * when some service sets `provider`.
 */
import { durationMs } from "../../core/config/duration.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { SPEC_FAILOVER } from "../../core/proxy/backend-health.ts";
import { llmSection } from "./config.ts";
import { ConsumerTokens, TOP_REFRESH_MS } from "./consumer-tokens.ts";
import { FirstTokenTimes } from "./first-token.ts";
import { GenAiTokenUsage } from "./genai.ts";
import { createLlmMode } from "./handler.ts";
import { LlmMetrics } from "./metrics.ts";

export default definePlugin({
  name: "llm-proxy",
  dependsOn: ["sync-proxy", "providers"],
  // Answers from the response cache when a service enables it; skips backends sitting out;
  // prices answers when some model has a price.
  optionalDependsOn: ["response-cache", "backend-health", "pricing"],
  section: llmSection,
  enabled: (config) => config.services.some((service) => service.provider !== ""),
  setup(api) {
    const { config } = api;
    let tokens: ConsumerTokens | undefined;
    if (config.metrics.top_consumers > 0 && config.server.consumer_header !== "") {
      const tracker = new ConsumerTokens(api.kv, api.metrics, config.metrics.top_consumers, api.log);
      api.onClose(() => tracker.flush());
      api.task({ name: "llm-consumer-tokens-top", everyMs: TOP_REFRESH_MS, runAtStart: true, run: () => tracker.refresh() });
      tokens = tracker;
    }
    api.use("syncModes").register(
      createLlmMode({
        providers: api.use("providers"),
        protocols: api.use("clientProtocols"),
        cache: () => (api.has("responseCache") ? api.use("responseCache") : undefined),
        fetch: api.fetch,
        health: api.has("backendHealth") ? api.use("backendHealth") : SPEC_FAILOVER,
        backendTimeoutMs: durationMs(config.server.backend_timeout),
        clock: api.clock,
        newId: () => api.ids.newId(),
        log: api.log,
        metrics: new LlmMetrics(api.metrics),
        firstToken: new FirstTokenTimes(api.metrics),
        // The GenAI metric only when it is exported (OpenTelemetry metrics mirror the Prometheus registry).
        genAiTokens: config.opentelemetry.enabled && config.opentelemetry.metrics.enabled ? new GenAiTokenUsage(api.metrics) : undefined,
        tokens,
        pricing: api.has("pricing") ? api.use("pricing") : undefined,
        emitUsage: (event) => api.emit("llm.usage", event),
        countStreamedTokens: config.llm.count_streamed_tokens,
        streamIdleTimeoutMs: durationMs(config.llm.stream_idle_timeout),
      }),
    );
  },
});
