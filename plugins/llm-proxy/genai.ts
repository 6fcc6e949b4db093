/**
 * The OpenTelemetry GenAI semantic conventions for the LLM proxy: the `gen_ai.*` attributes of
 * a request's span, and the `gen_ai.client.token.usage` histogram. Prometheus names cannot hold
 * dots, so the histogram is registered as `gen_ai_client_token_usage` with `gen_ai_*` labels,
 * and the OTLP export turns the underscores back into dots (plugins/otel/metrics-otlp.ts). It
 * is registered only when OpenTelemetry metrics export is on: nobody else asked for it.
 */
import { type Bytes, isRecord, parseJson } from "../../core/llm/json.ts";
import type { TokenUsage } from "../../core/llm/usage.ts";
import { histogramChildren } from "../../core/metric-labels.ts";
import type { Metrics } from "../../core/metrics.ts";
import { GENAI } from "../../core/telemetry/attributes.ts";
import type { SpanAttributes } from "../../core/telemetry/tracing.ts";

/** `gen_ai.operation.name` by the path the client called. */
export function operationOf(path: string): "chat" | "embeddings" | "text_completion" {
  if (path.endsWith("/embeddings")) return "embeddings";
  if (path.endsWith("/completions") && !path.endsWith("/chat/completions")) return "text_completion";
  return "chat";
}

export interface GenAiCall {
  operation: string;
  /** The service's provider (`chat_completions`, `messages_api`...). */
  provider: string;
  /** The model sent to the backend. */
  requestModel: string;
  /** A complete answer's body as the client got it (chat-completions or Messages JSON); absent for streams. */
  answer?: Bytes;
  usage?: TokenUsage;
}

const decoder = new TextDecoder();

export function genAiSpanAttributes(call: GenAiCall): SpanAttributes {
  const attributes: SpanAttributes = {
    [GENAI.operation]: call.operation,
    [GENAI.providerName]: call.provider,
    [GENAI.system]: call.provider,
  };
  if (call.requestModel !== "") attributes[GENAI.requestModel] = call.requestModel;
  if (call.usage) {
    attributes[GENAI.inputTokens] = call.usage.prompt_tokens;
    attributes[GENAI.outputTokens] = call.usage.completion_tokens;
  }
  // Parsed again only here, when the span ends: a request that is not traced never pays for it.
  const body = call.answer ? parseJson(decoder.decode(call.answer)) : undefined;
  if (isRecord(body)) {
    if (typeof body.model === "string" && body.model !== "") attributes[GENAI.responseModel] = body.model;
    // A chat completion's choices, or a Messages answer's (inbound Messages API) one stop reason.
    const reasons = Array.isArray(body.choices)
      ? body.choices.flatMap((choice) => (isRecord(choice) && typeof choice.finish_reason === "string" ? [choice.finish_reason] : []))
      : typeof body.stop_reason === "string"
      ? [body.stop_reason]
      : [];
    if (reasons.length > 0) attributes[GENAI.finishReasons] = reasons;
  }
  return attributes;
}

/** The semantic conventions' advised buckets for token counts. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

export class GenAiTokenUsage {
  private readonly histogram;
  private readonly observe;

  constructor(metrics: Metrics) {
    this.histogram = metrics.histogram({
      name: "gen_ai_client_token_usage",
      help: "Tokens of one LLM answer by type (input, output): the GenAI metric gen_ai.client.token.usage",
      labelNames: ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "gen_ai_token_type"],
      buckets: TOKEN_BUCKETS,
    });
    this.observe = histogramChildren(this.histogram);
  }

  record(call: { operation: string; provider: string; requestModel: string }, usage: TokenUsage): void {
    const base = { gen_ai_operation_name: call.operation, gen_ai_provider_name: call.provider, gen_ai_request_model: call.requestModel };
    this.observe({ ...base, gen_ai_token_type: "input" }).observe(usage.prompt_tokens);
    this.observe({ ...base, gen_ai_token_type: "output" }).observe(usage.completion_tokens);
  }
}
