/**
 * The LLM proxy: a sync mode that takes `POST /v1/*` JSON requests for services with a
 * `provider`, registered with the sync proxy, which owns the routes, reads the body and
 * resolves the model. Providers and client protocols come from the registries of the
 * `providers` plugin; the response cache is used when the `response-cache` plugin is on. On
 * when some service sets `provider`.
 */
import { durationMs } from "../../core/config/duration.ts";
import { fieldsOf } from "../../core/config/schema.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { SPEC_FAILOVER } from "../../core/proxy/backend-health.ts";
import { fallbackService, fallbackServiceFields, llmSection, topConsumersFields } from "./config.ts";
import { ConsumerTokens, TOP_REFRESH_MS } from "./consumer-tokens.ts";
import { FirstTokenTimes } from "./first-token.ts";
import { GenAiTokenUsage } from "./genai.ts";
import { createLlmMode } from "./handler.ts";
import { LlmHookRegistry } from "./hooks.ts";
import { LlmMetrics } from "./metrics.ts";
import { llmProxyOpenApi } from "./openapi.ts";

/** What other plugins need of the `llm` section (the limits hold a streamed request's budgets only when its tokens are counted). */
export interface LlmProxyService {
  /** `llm.count_streamed_tokens`. */
  readonly countStreamedTokens: boolean;
}

declare module "../../core/plugins/types.ts" {
  interface GatewayServices {
    llm: LlmProxyService;
  }
}

export default definePlugin({
  name: "llm-proxy",
  dependsOn: ["sync-proxy", "providers"],
  // Answers from the response cache when a service enables it; skips backends sitting out;
  // prices answers when some model has a price; counts GenAI tokens when OpenTelemetry exports metrics.
  optionalDependsOn: ["response-cache", "backend-health", "pricing", "otel"],
  section: llmSection,
  openapi: llmProxyOpenApi,
  sectionFields: [topConsumersFields],
  serviceFields: fallbackServiceFields,
  enabled: (config) => config.services.some((service) => service.provider !== ""),
  setup(api) {
    const { config } = api;
    const settings = api.section;
    api.provide("llm", { countStreamedTokens: settings.count_streamed_tokens });
    const hooks = new LlmHookRegistry();
    api.provide("llmHooks", hooks);
    let tokens: ConsumerTokens | undefined;
    const { top_consumers: topConsumers } = fieldsOf(config, topConsumersFields);
    if (topConsumers > 0 && config.server.consumer_header !== "") {
      const tracker = new ConsumerTokens(api.kv, api.metrics, topConsumers, api.log);
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
        genAiTokens: api.has("telemetry") && api.use("telemetry").metrics ? new GenAiTokenUsage(api.metrics) : undefined,
        tokens,
        pricing: api.has("pricing") ? api.use("pricing") : undefined,
        emitUsage: (event) => api.emit("llm.usage", event),
        countStreamedTokens: settings.count_streamed_tokens,
        streamIdleTimeoutMs: durationMs(settings.stream_idle_timeout),
        fallbackModels: {
          find: (from, alias) => fallbackService(config.services, from, alias),
          mayUse: (ctx, service) => api.modelAccess.of(ctx).mayUse(service),
        },
        hooks,
      }),
    );
  },
});
