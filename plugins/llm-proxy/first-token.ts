/**
 * `svc_llm_time_to_first_token_seconds{service_type, model}`: for a streamed answer, the time
 * from the request's arrival to its first event going to the client, what a chat user waits
 * before text appears (the request duration histogram only shows the whole stream).
 */
import { histogramChildren } from "../../core/metric-labels.ts";
import type { Metrics } from "../../core/metrics.ts";

const TTFT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60];

export class FirstTokenTimes {
  private readonly histogram;
  private readonly observeFor;

  constructor(metrics: Metrics) {
    this.histogram = metrics.histogram({
      name: "svc_llm_time_to_first_token_seconds",
      help: "Streamed LLM answers: seconds from the request's arrival to the first event sent to the client",
      labelNames: ["service_type", "model"],
      buckets: TTFT_BUCKETS,
    });
    this.observeFor = histogramChildren(this.histogram);
  }

  /** Observes `seconds` for a stream whose first bytes are going out now. */
  record(labels: { service_type: string; model: string }, seconds: number): void {
    this.observeFor({ service_type: labels.service_type, model: labels.model }).observe(seconds);
  }
}
