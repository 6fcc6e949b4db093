/**
 * What the LLM proxy's steps are given: what the plugin's setup (index.ts) hands the mode
 * (registries, stores, clocks, meters), and the request on its way through the steps.
 */
import type { ResponseCache } from "../../core/llm/cache.ts";
import type { ClientProtocolRegistry } from "../../core/llm/client-protocol.ts";
import type { ProviderDefinition, ProviderRegistry } from "../../core/llm/provider.ts";
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import type { Clock } from "../../core/clock.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { Logger } from "../../core/log.ts";
import type { Pricing } from "../../core/pricing/price.ts";
import type { BackendHealth } from "../../core/proxy/backend-health.ts";
import type { ConsumerTokens } from "./consumer-tokens.ts";
import type { FallbackModels } from "./fallback.ts";
import type { FirstTokenTimes } from "./first-token.ts";
import type { GenAiTokenUsage } from "./genai.ts";
import type { LlmHookRegistry, RequestHooks } from "./hooks.ts";
import type { LlmLabels, LlmMetrics } from "./metrics.ts";
import type { ProtocolRoute } from "./protocol-route.ts";

export interface LlmModeDeps {
  providers: ProviderRegistry;
  /** The client protocols (chat completions alone when no protocol plugin registered one). */
  protocols: ClientProtocolRegistry;
  /** The response cache, when a plugin provides one (looked up per request: plugins may set up later). */
  cache(): ResponseCache | undefined;
  fetch: typeof fetch;
  /** Which answers fail over, which backends sit out (the default rule without the backend-health plugin). */
  health: BackendHealth;
  backendTimeoutMs: number;
  clock: Clock;
  newId(): string;
  random?: () => number;
  log: Logger;
  metrics: LlmMetrics;
  firstToken: FirstTokenTimes;
  /** `gen_ai.client.token.usage`, when OpenTelemetry metrics export is on. */
  genAiTokens?: GenAiTokenUsage;
  tokens: ConsumerTokens | undefined;
  /** Prices counted answers (the `pricing` plugin), when some model has a price. */
  pricing?: Pricing;
  emitUsage(event: LlmUsageEvent): void;
  /** `llm.count_streamed_tokens`: count the usage a stream reports (off: a stream counts as a request only). */
  countStreamedTokens: boolean;
  /** `llm.stream_idle_timeout` in ms; 0 = no limit. */
  streamIdleTimeoutMs: number;
  /** The models `fallbacks` and `context_window_fallbacks` name, and whether the caller may use them. */
  fallbackModels: FallbackModels;
  /** The `llmHooks` service: plugins' hooks on what a model reads and writes (hooks.ts). */
  hooks: LlmHookRegistry;
}

/** One request on its way: what every step after the model lookup reads. */
export interface LlmRequest {
  readonly ctx: RequestContext;
  readonly service: ServiceConfig;
  /** The service's provider: the default of its backends (each attempt has its backend's own). */
  readonly provider: ProviderDefinition;
  /** Its client protocol, and whether the service's provider's backend speaks it (each attempt has its own route). */
  readonly route: ProtocolRoute;
  /** The client asked for `"stream": true`. */
  readonly stream: boolean;
  /** Its metric labels; `backend_model` is set once a backend was chosen. */
  readonly labels: LlmLabels;
  /** The plugins' hooks that have work for it (hooks.ts). */
  readonly hooks?: RequestHooks;
}
