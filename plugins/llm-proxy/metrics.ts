/**
 * The LLM series (docs/design.md#metrics), with exactly its names and labels. `model` is the client
 * alias, `backend_model` the model sent to the backend that answered, `user_type` the caller's
 * ("" when none).
 */
import type { TokenUsage } from "../../core/llm/usage.ts";
import { type CounterChild, counterChildren, type HistogramChild, histogramChildren } from "../../core/metric-labels.ts";
import type { Metrics } from "../../core/metrics.ts";

/** Why a request moved to a fallback model (`services[].fallbacks`, `services[].context_window_fallbacks`). */
export type FallbackReason = "unavailable" | "context_window";

export interface LlmLabels {
  service_type: string;
  model: string;
  backend_model: string;
  provider: string;
  user_type: string;
}

/** LLM answers take seconds to minutes, not the milliseconds of the default buckets. */
const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];
const TOKEN_BUCKETS = [16, 64, 256, 1024, 4096, 16384, 65536, 262144];

export class LlmMetrics {
  private readonly requests;
  private readonly duration;
  private readonly tokens;
  private readonly perRequest;
  private readonly incompleteStreams;
  private readonly usageMissingStreams;
  private readonly retryAfterRefusals;
  private readonly fallbacks;

  constructor(metrics: Metrics) {
    this.requests = metrics.counter({
      name: "svc_llm_requests_total",
      help: "LLM proxy requests answered from a backend (or failed), by HTTP status",
      labelNames: ["service_type", "model", "backend_model", "provider", "user_type", "status"],
    });
    this.duration = metrics.histogram({
      name: "svc_llm_request_duration_seconds",
      help: "LLM proxy request duration, until the last byte for streams",
      labelNames: ["service_type", "model", "backend_model", "provider", "user_type"],
      buckets: DURATION_BUCKETS,
    });
    this.tokens = metrics.counter({
      name: "svc_llm_tokens_total",
      help: "Tokens reported by LLM backends, by type (prompt or completion); streamed answers only with llm.count_streamed_tokens",
      labelNames: ["service_type", "model", "backend_model", "user_type", "type"],
    });
    this.perRequest = metrics.histogram({
      name: "svc_llm_tokens_per_request",
      help: "Prompt + completion tokens of one LLM response (streamed ones only with llm.count_streamed_tokens)",
      labelNames: ["service_type", "model", "backend_model", "user_type"],
      buckets: TOKEN_BUCKETS,
    });
    this.incompleteStreams = metrics.counter({
      name: "svc_llm_stream_incomplete_total",
      help: "Backend streams that did not end as their protocol says: no_end (closed without its end), idle (llm.stream_idle_timeout), reset (broke off)",
      labelNames: ["service_type", "model", "reason"],
    });
    this.usageMissingStreams = metrics.counter({
      name: "svc_llm_stream_usage_missing_total",
      help: "Streamed answers that reported no usage (counted only with llm.count_streamed_tokens)",
      labelNames: ["service_type", "model"],
    });
    this.retryAfterRefusals = metrics.counter({
      name: "svc_llm_retry_after_refusals_total",
      help: "LLM requests refused with 429 without calling a backend: every backend of the model was sitting out a Retry-After it sent",
      labelNames: ["service_type", "model"],
    });
    this.fallbacks = metrics.counter({
      name: "svc_llm_fallbacks_total",
      help: "LLM requests moved to another model: reason unavailable (every backend of the model failed) or context_window (the prompt did not fit the model)",
      labelNames: ["service_type", "model", "fallback", "reason"],
    });
    this.requestsFor = counterChildren(this.requests);
    this.tokensFor = counterChildren(this.tokens);
    this.durationFor = histogramChildren(this.duration);
    this.perRequestFor = histogramChildren(this.perRequest);
  }

  // Label sets prepared once (see core/metric-labels.ts); always built in labelNames order.
  private readonly requestsFor: (labels: Record<string, string>) => CounterChild;
  private readonly durationFor: (labels: Record<string, string>) => HistogramChild;
  private readonly tokensFor: (labels: Record<string, string>) => CounterChild;
  private readonly perRequestFor: (labels: Record<string, string>) => HistogramChild;

  request(labels: LlmLabels, status: number, seconds: number): void {
    const { service_type, model, backend_model, provider, user_type } = labels;
    this.requestsFor({ service_type, model, backend_model, provider, user_type, status: String(status) }).inc();
    this.durationFor({ service_type, model, backend_model, provider, user_type }).observe(seconds);
  }

  /** A request moved from `model` to the `fallback` alias. */
  fallback(serviceType: string, model: string, fallback: string, reason: FallbackReason): void {
    this.fallbacks.labels({ service_type: serviceType, model, fallback, reason }).inc();
  }

  incomplete(labels: LlmLabels, reason: "no_end" | "idle" | "reset"): void {
    this.incompleteStreams.labels({ service_type: labels.service_type, model: labels.model, reason }).inc();
  }

  usageMissing(labels: LlmLabels): void {
    this.usageMissingStreams.labels({ service_type: labels.service_type, model: labels.model }).inc();
  }

  retryAfterRefusal(labels: LlmLabels): void {
    this.retryAfterRefusals.labels({ service_type: labels.service_type, model: labels.model }).inc();
  }

  usage(labels: LlmLabels, usage: TokenUsage): void {
    const { service_type, model, backend_model, user_type } = labels;
    this.tokensFor({ service_type, model, backend_model, user_type, type: "prompt" }).inc(usage.prompt_tokens);
    this.tokensFor({ service_type, model, backend_model, user_type, type: "completion" }).inc(usage.completion_tokens);
    this.perRequestFor({ service_type, model, backend_model, user_type }).observe(usage.prompt_tokens + usage.completion_tokens);
  }
}
