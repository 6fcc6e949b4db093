/**
 * Span attribute names: OpenTelemetry's HTTP semantic conventions where one exists, and
 * `gateway.*` for what only the gateway knows (the model, the job and who asked for it), and
 * the GenAI conventions (`gen_ai.*`) on LLM requests.
 * Plain constants, without the SDK: the relay names its job spans with them too.
 */
export const ATTR = {
  method: "http.request.method",
  route: "http.route",
  status: "http.response.status_code",
  path: "url.path",
  scheme: "url.scheme",
  fullUrl: "url.full",
  serverAddress: "server.address",
  serverPort: "server.port",
  userAgent: "user_agent.original",
  errorType: "error.type",
  resendCount: "http.request.resend_count",
  mode: "gateway.mode",
  serviceType: "gateway.service_type",
  model: "gateway.model",
  consumer: "gateway.consumer",
  userType: "gateway.user_type",
  attempt: "gateway.attempt",
  outcome: "gateway.outcome",
  jobId: "gateway.job_id",
  operation: "gateway.operation",
  /** What the request cost in `pricing.currency` (a priced LLM response). */
  cost: "gateway.cost",
} as const;

/** OpenTelemetry GenAI semantic conventions, on the span of an LLM proxy request. */
export const GENAI = {
  operation: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  /** The older name of `gen_ai.provider.name`, which many backends still read. */
  system: "gen_ai.system",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  finishReasons: "gen_ai.response.finish_reasons",
} as const;
