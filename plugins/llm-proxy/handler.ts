/**
 * The LLM proxy mode (spec 1 mode 3, 4.6), in the spec's processing order:
 *
 *   1. cache lookup (non-streaming)            -> a hit answers with `X-Cache: HIT`
 *   2. backend list                            -> backendOrder, the provider's default address;
 *                                                 all sitting out a Retry-After -> 429 at once
 *   3. per backend: model rewrite, headers (`inference_headers` then `backends[].headers`),
 *      request translation, forward            -> failover on a network error or a failover status
 *   4. response translation back to chat completions (streams: piped as they arrive)
 *   5. metrics and token tracking
 *   6. the response, with `X-Cache: MISS`
 *   7. cache fill once the response is written (the cache bounds it at 5 s)
 *
 * Before all of it, while the route resolves the model (`check`), the body's well-known fields
 * must have their type (request-shape.ts): a wrong one is a 400 no lookup, limit or backend sees.
 *
 * Nothing here names a provider: the service's `provider` is looked up in the registry.
 */
import { CACHED_STREAM_MAX_BYTES, type CacheLookup, type PendingLookup, type ResponseCache } from "../../core/llm/cache.ts";
import type { Bytes } from "../../core/llm/json.ts";
import type { ProviderDefinition, ProviderRegistry, Translator, TranslatorContext } from "../../core/llm/provider.ts";
import { openStream, type OpenedStream, type StreamOutcome } from "../../core/llm/stream.ts";
import { countedRequest, type LlmUsageEvent, type TokenUsage } from "../../core/llm/usage.ts";
import type { Clock } from "../../core/clock.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errorResponse, errors, GatewayError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { wholeBody } from "../../core/pipeline/whole-body.ts";
import type { BackendHealth } from "../../core/proxy/backend-health.ts";
import { backendOrder, withFailover, type BackendTarget } from "../../core/proxy/backends.ts";
import { forwardHeaders } from "../../core/proxy/headers.ts";
import type { SyncBody, SyncMode } from "../../core/proxy/modes.ts";
import { completeAnswer, errorAnswer, streamAnswer, type Answer } from "./answer.ts";
import { BackendTimeoutError, backendUrl, callBackend, callBackendWhole } from "../../core/proxy/backend-call.ts";
import type { ConsumerTokens } from "./consumer-tokens.ts";
import type { FirstTokenTimes } from "./first-token.ts";
import { genAiSpanAttributes, operationOf, type GenAiTokenUsage } from "./genai.ts";
import type { LlmLabels, LlmMetrics } from "./metrics.ts";
import { backendBody, UntranslatableRequest } from "./request-body.ts";
import { requestShapeProblem } from "./request-shape.ts";
import { COST_HEADER, formatCost, type Pricing } from "../../core/pricing/price.ts";
import { messagesToChatRequest } from "./messages-to-chat-request.ts";
import { CHAT_PATH, messagesFromChat, messagesRoute, messagesStreamError, nativeMessages, nativeUsage, type MessagesRoute } from "./messages-inbound.ts";
import { StreamRecording } from "./stream-record.ts";

/** An inbound Messages request (messages-inbound.ts): which route, and whether the provider takes it as it is. */
interface Inbound {
  route: MessagesRoute | undefined;
  native: boolean;
}

/**
 * Not forwarded: the runtime's fetch negotiates (and undoes) compression itself, and the body
 * is always JSON the gateway wrote.
 */
const NOT_FORWARDED = ["accept-encoding", "content-type"];

/** Set on answers as they are built (a header added afterwards costs a `Headers` per response). */
const MISS: Readonly<Record<string, string>> = Object.freeze({ "x-cache": "MISS" });

declare module "../../core/pipeline/context.ts" {
  interface RequestVars {
    /** The response cache's read, started as soon as the model was resolved (`prepare`). */
    llmCacheLookup: PendingLookup | undefined;
  }
}

export interface LlmModeDeps {
  providers: ProviderRegistry;
  /** The response cache, when a plugin provides one (looked up per request: plugins may set up later). */
  cache(): ResponseCache | undefined;
  fetch: typeof fetch;
  /** Which answers fail over, which backends sit out (the spec's rule without the backend-health plugin). */
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
  /** `llm.count_streamed_tokens`: count the usage a stream reports (the spec counts none). */
  countStreamedTokens: boolean;
  /** `llm.stream_idle_timeout` in ms; 0 = no limit. */
  streamIdleTimeoutMs: number;
}

interface Attempt {
  target: BackendTarget;
  translator: Translator;
  url: string;
  body: Bytes;
  /** A non-streaming answer's body, read whole within the attempt (see `forward`). */
  received?: Bytes;
  /** A 2xx stream with its first bytes read within the attempt (see `forward`). */
  opened?: OpenedStream;
}

function unknownProvider(service: ServiceConfig, providers: ProviderRegistry): GatewayError {
  return errors.providerNotRegistered(
    `model "${service.model}": provider "${service.provider}" is not registered; registered providers: ${providers.names().join(", ") || "(none)"}. Fix services[].provider or load the provider's plugin with plugins.load`,
  );
}

function withCacheHeader(response: Response, value: "HIT" | "MISS"): Response {
  response.headers.set("x-cache", value);
  return response;
}

export function createLlmMode(deps: LlmModeDeps): SyncMode {
  const seconds = (ctx: RequestContext) => (deps.clock.now() - ctx.startedAt) / 1000;

  /** Step 3: one prepared request per target, so a request the provider cannot express fails once, with 400, before anything is sent. */
  function prepare(
    ctx: RequestContext,
    service: ServiceConfig,
    body: Extract<SyncBody, { kind: "json" }>,
    provider: ProviderDefinition,
    targets: readonly BackendTarget[],
    stream: boolean,
    inbound: Inbound,
  ): Attempt[] {
    // A translated Messages request is a chat-completions request from here on.
    const clientPath = inbound.route && !inbound.native ? CHAT_PATH : ctx.url.pathname;
    const path = `${provider.backendPath?.(clientPath) ?? clientPath}${ctx.url.search}`;
    const context: TranslatorContext = { stream, now: () => deps.clock.now(), newId: deps.newId };
    const translatorFor = (): Translator => {
      if (inbound.native) return nativeMessages();
      const translator = provider.createTranslator(context);
      return inbound.route ? messagesFromChat(translator, context) : translator;
    };
    return targets.map((target) => {
      const translator = translatorFor();
      try {
        // A native Messages body gets the model rewrite alone (no chat `stream_options`).
        return { target, translator, url: backendUrl(target.url, path), body: backendBody(body, target, service.model, stream && !inbound.native, translator) };
      } catch (error) {
        if (error instanceof UntranslatableRequest) {
          throw errors.badRequest(`the request cannot be sent to provider "${provider.name}": ${error.message}`);
        }
        throw error;
      }
    });
  }

  async function forward(ctx: RequestContext, attempts: Attempt[], stream: boolean) {
    const byTarget = new Map(attempts.map((a) => [a.target, a]));
    const result = await withFailover(
      attempts.map((a) => a.target),
      async (target) => {
        const attempt = byTarget.get(target) as Attempt;
        const headers = forwardHeaders(ctx.request.headers, target.headers, NOT_FORWARDED, ctx.backendHeaders);
        headers["content-type"] = "application/json";
        const init = { method: "POST", headers, body: attempt.body };
        const options = { fetch: deps.fetch, timeoutMs: deps.backendTimeoutMs, clientSignal: ctx.clientGone };
        if (stream) {
          const response = await callBackend(attempt.url, init, options);
          // The client's status and headers wait for the stream's first bytes, so a stream that
          // breaks off, ends or stalls before them is this attempt's failure and fails over like
          // any failed call. From its first bytes on, a stream is the client's.
          if (response.status >= 200 && response.status <= 299 && response.body) attempt.opened = await openStream(response.body, deps.backendTimeoutMs);
          return response;
        }
        // A non-streaming answer is read whole before anything goes to the client, so a backend
        // that breaks off or stalls mid-body is this attempt's failure and the next backend is
        // tried (spec 4.6 "Backend routing", 7).
        const whole = await callBackendWhole(attempt.url, init, options);
        attempt.received = whole.body;
        return whole.response;
      },
      ctx.clientGone,
      { health: deps.health, serviceType: ctx.service?.type ?? ctx.serviceType },
    );
    if (result.failures.length > 0) {
      deps.log.warn("llm_backend_failover", {
        model: ctx.service?.model,
        failures: result.failures.map((f) => ({ url: f.target.url, reason: f.reason })),
        answered_by: result.target?.url,
      });
    }
    return { result, attempt: result.target ? byTarget.get(result.target) : undefined };
  }

  /** Step 5: metrics, consumer tokens and the `llm.usage` event for a complete answer. */
  function account(ctx: RequestContext, labels: LlmLabels, answer: Answer, status: number): void {
    deps.metrics.request(labels, status, seconds(ctx));
    if (!answer.usage) return;
    const cost = countTokens(ctx, labels, answer.usage);
    // Only a whole answer can carry its cost in a header (a stream's headers left long before its usage).
    if (cost !== undefined) answer.response.headers.set(COST_HEADER, formatCost(cost));
  }

  /** A streamed answer ended: incomplete streams counted and logged, and (when on) its tokens. */
  function streamEnded(ctx: RequestContext, labels: LlmLabels, backendUrl: string, outcome: StreamOutcome): void {
    if (outcome.incomplete) {
      deps.metrics.incomplete(labels, outcome.incomplete);
      deps.log.warn("llm_stream_incomplete", { model: labels.model, backend: backendUrl, reason: outcome.incomplete });
    }
    if (!deps.countStreamedTokens) return;
    if (outcome.usage) countTokens(ctx, labels, outcome.usage);
    else deps.metrics.usageMissing(labels);
  }

  /** Metrics, consumer tokens, the cost and the `llm.usage` event of an answer's usage; the cost when priced. */
  function countTokens(ctx: RequestContext, labels: LlmLabels, usage: TokenUsage): number | undefined {
    deps.metrics.usage(labels, usage);
    deps.genAiTokens?.record({ operation: operationOf(ctx.url.pathname), provider: labels.provider, requestModel: labels.backend_model }, usage);
    const consumer = ctx.principal.consumer ?? "";
    const userType = ctx.principal.userType ?? "";
    if (deps.tokens && consumer !== "") deps.tokens.add(consumer, userType, usage);
    const serviceType = ctx.serviceType || labels.service_type;
    const cached = usage.cached_tokens ?? 0;
    const cacheCreation = usage.cache_creation_tokens ?? 0;
    const cost = deps.pricing?.charge(
      { serviceType, model: labels.model, backendModel: labels.backend_model },
      { prompt: usage.prompt_tokens, completion: usage.completion_tokens, cached, cacheCreation },
    );
    if (cost !== undefined) ctx.vars.cost = cost;
    deps.emitUsage({
      serviceType,
      model: labels.model,
      backendModel: labels.backend_model,
      consumer,
      userType,
      prompt: usage.prompt_tokens,
      completion: usage.completion_tokens,
      cached,
      cacheCreation,
      ...(cost !== undefined ? { cost } : {}),
      counted: countedRequest(ctx.request.headers),
      ...(ctx.principal.limits ? { credential: ctx.principal.limits } : {}),
      ...(ctx.principal.keyId !== undefined ? { keyId: ctx.principal.keyId } : {}),
      ...(ctx.vars.budgetHold ? { hold: ctx.vars.budgetHold } : {}),
    });
    return cost;
  }

  function beginLookup(ctx: RequestContext, service: ServiceConfig, body: Extract<SyncBody, { kind: "json" }>): PendingLookup | undefined {
    return deps.cache()?.begin({ service, body: body.value, headers: ctx.request.headers, pathAndQuery: `${ctx.url.pathname}${ctx.url.search}` });
  }

  /** The body the provider gets: an inbound Messages request it does not speak becomes a chat-completions one. */
  function providerBody(service: ServiceConfig, provider: ProviderDefinition, body: Extract<SyncBody, { kind: "json" }>, inbound: Inbound): Extract<SyncBody, { kind: "json" }> {
    if (!inbound.route || inbound.native) return body;
    if (inbound.route === "count_tokens") {
      throw errors.notFound(`model "${service.model}" cannot count tokens: its provider "${provider.name}" does not speak the Messages API (only POST /v1/messages is translated)`);
    }
    try {
      const value = messagesToChatRequest(body.value);
      return { ...body, value, bytes: new TextEncoder().encode(JSON.stringify(value)) };
    } catch (error) {
      if (error instanceof UntranslatableRequest) throw errors.badRequest(error.message);
      throw error;
    }
  }

  async function handle(ctx: RequestContext, clientBody: SyncBody): Promise<Response> {
    const service = ctx.service;
    if (!service || clientBody.kind !== "json") throw new Error("the LLM proxy got a request it does not accept");
    const provider = deps.providers.get(service.provider);
    if (!provider) throw unknownProvider(service, deps.providers);
    const route = messagesRoute(ctx.url.pathname);
    const inbound: Inbound = { route, native: route !== undefined && provider.speaksMessages === true };
    const stream = clientBody.value.stream === true;
    const labels: LlmLabels = {
      service_type: service.type,
      model: service.model || String(clientBody.value.model ?? ""),
      backend_model: "",
      provider: service.provider,
      user_type: ctx.principal.userType ?? "",
    };

    // 1. Cache lookup (its store read started in `prepare`): the cache decides what bypasses it
    //    (streams unless llm.cache_streams, no-cache, TTL 0). A stored stream is replayed whole.
    const pending = ctx.vars.llmCacheLookup ?? beginLookup(ctx, service, clientBody);
    const lookup: CacheLookup = pending ? await pending.result() : { kind: "bypass" };
    if (lookup.kind === "hit") {
      const { answer } = lookup;
      return wholeBody(new Response(answer.body, { status: answer.status, headers: { "content-type": answer.contentType, "x-cache": "HIT" } }));
    }
    // Identical requests may be waiting on this one (coalescing): whatever way it ends, let them go.
    if (lookup.kind === "miss") ctx.defer(() => lookup.share(undefined));
    // The cache keys on what the client sent; everything after it on what the provider gets.
    const body = providerBody(service, provider, clientBody, inbound);

    // The GenAI attributes of the request's span, computed only if it is traced, when it ends.
    let answered: Answer | undefined;
    ctx.vars.spanAttributes = () =>
      genAiSpanAttributes({
        operation: operationOf(ctx.url.pathname),
        provider: service.provider,
        requestModel: labels.backend_model,
        answer: answered?.stored && answered.stored.status < 300 ? answered.stored.body : undefined,
        usage: answered?.usage,
      });

    // 2. Backend list.
    const targets = backendOrder(service, deps.random, provider.defaultUrl);
    if (targets.length === 0) {
      throw errors.badGateway(`model "${service.model}" has no backend: set inference_url or backends[] (provider "${provider.name}" has no default address)`);
    }

    // Every backend asked for a pause (a Retry-After): refused at once rather than calling one early.
    const waitMs = deps.health.waitingOutRetryAfter(targets);
    if (waitMs !== undefined) {
      labels.backend_model = backendModelOf(targets[0], body.value, service.model);
      const refusal = errors.retryAfterRefusal(`every backend of model "${service.model}" is sitting out the Retry-After it sent; retry in ${Math.ceil(waitMs / 1000)}s`, waitMs / 1000, MISS);
      deps.metrics.retryAfterRefusal(labels);
      deps.metrics.request(labels, refusal.status, seconds(ctx));
      return refusal.toResponse();
    }

    // 3. Per backend, with failover.
    const attempts = prepare(ctx, service, body, provider, targets, stream, inbound);
    const { result, attempt } = await forward(ctx, attempts, stream);
    if (!result.response || !attempt) {
      labels.backend_model = backendModelOf(attempts[attempts.length - 1]?.target, body.value, service.model);
      const tried = result.failures.map((f) => `${f.target.url}: ${f.reason}`).join("; ");
      let failure: Response;
      if (ctx.clientGone.aborted) {
        // Nobody reads this; the status is for the counters and logs (nginx's 499).
        failure = errorResponse(499, "api_error", "the client closed the request before a backend answered", {}, "client_closed");
      } else if (result.error instanceof BackendTimeoutError) {
        failure = errors.gatewayTimeout(`the backend for model "${service.model}" did not answer in time: ${tried}`).toResponse();
      } else {
        failure = errors.badGateway(`no backend for model "${service.model}" answered: ${tried}`).toResponse();
      }
      deps.metrics.request(labels, failure.status, seconds(ctx));
      return withCacheHeader(failure, "MISS");
    }
    labels.backend_model = backendModelOf(attempt.target, body.value, service.model);
    const backend = result.response;

    // 4. The answer, translated back.
    let answer: Answer;
    try {
      if (backend.status < 200 || backend.status > 299) {
        // A translated error body keeps the backend's Retry-After (a 429 every backend sent).
        const retryAfter = backend.headers.get("retry-after");
        answer = await errorAnswer(backend, attempt.received, attempt.translator, retryAfter === null ? MISS : { ...MISS, "retry-after": retryAfter });
      } else if (stream) {
        const backendUrl = attempt.target.url;
        // Whether the stream ended as its protocol says, with no error event: only then may it be cached.
        let failed = false;
        // A miss with llm.cache_streams: the stream records what it sends (stream-record.ts).
        const recording = lookup.kind === "miss" ? new StreamRecording(CACHED_STREAM_MAX_BYTES) : undefined;
        const { status } = backend;
        answer = streamAnswer(
          backend,
          attempt.opened,
          attempt.translator,
          {
            format: provider.streamFormat ?? "sse",
            idleTimeoutMs: deps.streamIdleTimeoutMs,
            onError: (reason, error) => {
              failed = true;
              deps.log.warn("llm_stream_failed", { model: service.model, backend: backendUrl, reason, error });
            },
            // Before the client's stream closes, so the usage record of this request carries the tokens.
            onEnd: (outcome) => {
              streamEnded(ctx, labels, backendUrl, outcome);
              const body = recording && !outcome.incomplete && !outcome.cancelled && !failed ? recording.bytes() : undefined;
              if (lookup.kind === "miss" && body) void lookup.fill({ status, contentType: answer.response.headers.get("content-type") ?? "text/event-stream", body });
            },
            errorEvent: inbound.route ? messagesStreamError : undefined,
            // Time to first token: observed when the first event goes to the client.
            onFirstBytes: () => deps.firstToken.record(labels, seconds(ctx)),
            onBytes: recording?.add,
          },
          MISS,
        );
      } else {
        answer = await completeAnswer(backend, attempt.received, attempt.translator, MISS, inbound.native ? nativeUsage : undefined);
      }
    } catch (error) {
      deps.metrics.request(labels, error instanceof GatewayError ? error.status : 500, seconds(ctx));
      throw error;
    }

    answered = answer;

    // 5. Metrics and tokens: a stream is counted when it ends (its duration is the whole stream),
    //    its tokens only with llm.count_streamed_tokens (see `streamEnded`).
    if (stream && backend.status >= 200 && backend.status <= 299) {
      ctx.defer(() => deps.metrics.request(labels, backend.status, seconds(ctx)));
    } else {
      account(ctx, labels, answer, backend.status);
    }

    // 7. Cache fill after the response is written: a finalizer runs once the body is sent. The
    //    requests waiting on this one get the answer now.
    if (lookup.kind === "miss") lookup.share(answer.stored);
    if (lookup.kind === "miss" && answer.stored) {
      const stored = answer.stored;
      ctx.defer(() => {
        void lookup.fill(stored);
      });
    }

    // 6. The response (its `X-Cache: MISS` was set when it was built).
    return answer.response;
  }

  return {
    mode: "llm",
    accepts: (service, body) => service.provider !== "" && body.kind === "json",
    check(ctx, body) {
      if (body.kind !== "json") return;
      const problem = requestShapeProblem(body.value, messagesRoute(ctx.url.pathname) !== undefined);
      if (problem !== undefined) throw errors.badRequest(problem);
    },
    prepare(ctx, body) {
      if (ctx.service && body.kind === "json") ctx.vars.llmCacheLookup = beginLookup(ctx, ctx.service, body);
    },
    handle,
  };
}

/** The model the backend was sent: the rewrite, else what the client asked for, else the alias (see request-body.ts). */
function backendModelOf(target: BackendTarget | undefined, body: Record<string, unknown>, alias: string): string {
  if (target && target.model !== "") return target.model;
  return typeof body.model === "string" ? body.model : alias;
}
