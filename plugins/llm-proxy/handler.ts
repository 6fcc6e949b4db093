/**
 * The LLM proxy mode, in its processing order, each step in its own file:
 *
 *   1. cache lookup (non-streaming)            -> a hit answers with `X-Cache: HIT`
 *   2. backend list                            -> backendOrder, the provider's default address;
 *                                                 all sitting out a Retry-After -> 429 at once
 *   3. per backend, for its own provider: model rewrite, headers (`inference_headers` then
 *      `backends[].headers`, then the provider's auth), request translation, forward
 *                                              -> failover on a network error or a failover
 *                                                 status (attempts.ts)
 *   3b. every backend failed, or the prompt is too long for the model -> the service's
 *      `fallbacks` / `context_window_fallbacks` the caller may use, steps 2 and 3 again
 *                                                 (fallback.ts)
 *   4. the answer translated back, to chat completions and then to the client's protocol
 *      (streams: piped as they arrive)         -> answer.ts, stream-end.ts
 *   5. metrics and token tracking              -> accounting.ts
 *   6. the response, with `X-Cache: MISS`
 *   7. cache fill once the response is written (the cache bounds it at 5 s)
 *
 * Before all of it, while the route resolves the model (`check`), the body's well-known fields
 * must have the types its client protocol gives them: a wrong one is a 400 no lookup, limit or
 * backend sees.
 *
 * The client protocol is a parameter of every step (protocol-route.ts): the request's path
 * picks it from the `clientProtocols` registry, chat completions when no protocol claims the
 * path. Nothing here names a protocol or a provider: the service's `provider` is looked up in
 * the registry too.
 */
import type { CacheLookup } from "../../core/llm/cache.ts";
import type { ProviderRegistry } from "../../core/llm/provider.ts";
import { backendAddress } from "../../core/llm/registry.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors, GatewayError } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { backendOrder, type BackendTarget } from "../../core/proxy/backends.ts";
import type { SyncBody, SyncMode } from "../../core/proxy/modes.ts";
import { Accounting } from "./accounting.ts";
import { type Answer, backendAnswer, MISS } from "./answer.ts";
import { forward, noAnswer, prepareAttempts } from "./attempts.ts";
import { type Failure, failureReason, FallbackChain, modelHeader } from "./fallback.ts";
import { beginLookup, cachedResponse, fillCache, lookUp } from "./cache-step.ts";
import type { LlmModeDeps, LlmRequest } from "./deps.ts";
import { genAiSpanAttributes, operationOf } from "./genai.ts";
import { guardedInput, guardedRoute } from "./hooked-request.ts";
import { type JsonBody, openRequest, protocolRoute, type RequestBodies } from "./protocol-route.ts";

export type { LlmModeDeps } from "./deps.ts";

function unknownProvider(service: ServiceConfig, providers: ProviderRegistry): GatewayError {
  return errors.providerNotRegistered(
    `model "${service.model}": provider "${service.provider}" is not registered; registered providers: ${
      providers.names().join(", ") || "(none)"
    }. Fix services[].provider or load the provider's plugin with plugins.load`,
  );
}

function withCacheHeader(response: Response, value: "HIT" | "MISS"): Response {
  response.headers.set("x-cache", value);
  return response;
}

/** The model the backend was sent: the rewrite, else what the client asked for, else the alias (see request-body.ts). */
function backendModelOf(target: BackendTarget | undefined, body: Record<string, unknown>, alias: string): string {
  if (target && target.model !== "") return target.model;
  return typeof body.model === "string" ? body.model : alias;
}

/** What one model's backends gave: an answer (its status after the output hooks), or a failure response (the client's, unless a fallback answers instead). */
type ModelOutcome = { answer: Answer; status: number } | Failure;

export function createLlmMode(deps: LlmModeDeps): SyncMode {
  const accounting = new Accounting(deps);

  /** Every backend asked for a pause (a Retry-After): refused at once rather than calling one early. */
  function retryAfterRefusal(request: LlmRequest, targets: readonly BackendTarget[], body: JsonBody): Failure | undefined {
    const waitMs = deps.health.waitingOutRetryAfter(targets);
    if (waitMs === undefined) return undefined;
    const { service, labels } = request;
    labels.backend_model = backendModelOf(targets[0], body.value, service.model);
    const refusal = errors.retryAfterRefusal(
      `every backend of model "${service.model}" is sitting out the Retry-After it sent; retry in ${Math.ceil(waitMs / 1000)}s`,
      waitMs / 1000,
      MISS,
    );
    deps.metrics.retryAfterRefusal(labels);
    return { failure: refusal.toResponse(), reason: "unavailable" };
  }

  /** Steps 2 and 3 for one model: its backends in turn, and its answer (or why it failed, for its fallbacks). */
  async function fromBackends(request: LlmRequest, bodies: RequestBodies, lookup: CacheLookup): Promise<ModelOutcome> {
    const body = bodies.client;
    const { ctx, service, provider, labels } = request;
    // 2. Backend list.
    const targets = backendOrder(service, deps.random, provider.defaultUrl, (backend) => backendAddress(deps.providers, service, backend));
    if (targets.length === 0) {
      throw errors.badGateway(`model "${service.model}" has no backend: set inference_url or backends[] (provider "${provider.name}" has no default address)`);
    }
    const refusal = retryAfterRefusal(request, targets, body);
    if (refusal) return refusal;

    // 3. Per backend, with failover.
    const attempts = prepareAttempts(deps, request, bodies, targets);
    const { result, attempt } = await forward(deps, ctx, attempts, request.stream);
    if (!result.response || !attempt) {
      const last = attempts[attempts.length - 1];
      labels.backend_model = backendModelOf(last?.target, body.value, service.model);
      if (last) labels.provider = last.provider.name;
      const failure = noAnswer(request, result, attempts);
      return { failure, reason: failure.status === 499 ? undefined : "unavailable" };
    }
    labels.backend_model = backendModelOf(attempt.target, body.value, service.model);
    labels.provider = attempt.provider.name;
    const backend = result.response;
    const reason = failureReason(deps.health, attempt, backend);
    if (reason) return { failure: backend, reason, attempt };

    // 4. The answer, translated back (a whole one through the output hooks: masked or refused).
    try {
      let answer = await backendAnswer(deps, accounting, request, backend, attempt, lookup);
      let status = backend.status;
      if (request.hooks?.wantsOutput && !request.stream) {
        const context = { stream: false, now: () => deps.clock.now(), newId: deps.newId };
        const guarded = await request.hooks.guardAnswer(answer, attempt.route, context);
        answer = guarded.answer;
        if (guarded.refused) status = answer.response.status;
      }
      return { answer, status };
    } catch (error) {
      accounting.request(ctx, labels, error instanceof GatewayError ? error.status : 500);
      throw error;
    }
  }

  /** A failure the client gets (no fallback answered): in the client's protocol, with its request metrics. */
  async function failed(request: LlmRequest, outcome: Failure, lookup: CacheLookup): Promise<Answer> {
    const { ctx, labels } = request;
    if (!outcome.attempt) {
      accounting.request(ctx, labels, outcome.failure.status);
      return { response: withCacheHeader(outcome.failure, "MISS") };
    }
    const answer = await backendAnswer(deps, accounting, request, outcome.failure, outcome.attempt, lookup);
    accounting.answered(ctx, labels, answer, outcome.failure.status);
    return answer;
  }

  async function handle(ctx: RequestContext, clientBody: SyncBody): Promise<Response> {
    const service = ctx.service;
    if (!service || clientBody.kind !== "json") throw new Error("the LLM proxy got a request it does not accept");
    const provider = deps.providers.get(service.provider);
    if (!provider) throw unknownProvider(service, deps.providers);
    let protocol = deps.protocols.forPath(ctx.url.pathname);
    // What a protocol that keeps state opened for this request (`open`), for every model tried.
    let routedPath: string | undefined;
    const stream = clientBody.value.stream === true;
    const hooks = deps.hooks.open({ ctx, model: service.model || String(clientBody.value.model ?? ""), stream });
    const requestFor = (model: typeof service, modelProvider: typeof provider): LlmRequest => ({
      ctx,
      service: model,
      provider: modelProvider,
      route: { ...guardedRoute(protocolRoute(protocol, modelProvider), modelProvider, hooks, ctx, model, clientBody), routedPath },
      stream,
      labels: {
        service_type: model.type,
        model: model.model || String(clientBody.value.model ?? ""),
        backend_model: "",
        provider: model.provider,
        user_type: ctx.principal.userType ?? "",
      },
      hooks,
    });
    let request = requestFor(service, provider);
    // A protocol that keeps state opens the request (it may refuse it: an id that is not the caller's).
    const { request: openedRequest, opened } = await openRequest(request, clientBody);
    if (opened) {
      request = openedRequest;
      protocol = openedRequest.route.protocol;
      routedPath = openedRequest.route.routedPath;
    }

    // The GenAI attributes of the request's span (and the hooks'), computed only if it is traced, when it ends.
    // deno-lint-ignore prefer-const -- read by the span callback, which may run before the answer exists
    let answered: Answer | undefined;
    ctx.vars.spanAttributes = () => ({
      ...genAiSpanAttributes({
        operation: operationOf(ctx.url.pathname),
        provider: request.labels.provider,
        requestModel: request.labels.backend_model,
        answer: answered?.stored && answered.stored.status < 300 ? answered.stored.body : undefined,
        usage: answered?.usage,
      }),
      ...hooks?.spanAttributes(),
    });

    // 0. The input hooks, on the chat-completions request: refused here, or masked before the
    //    cache lookup (a masked prompt is what is cached and sent).
    const input = await guardedInput(request, clientBody, (status) => accounting.request(ctx, request.labels, status));

    // 1. Cache lookup: on what the client sent (masked by the hooks).
    const lookup = await lookUp(deps, ctx, service, input.changed ? input.body : clientBody);
    if (lookup.kind === "hit") return cachedResponse(lookup.answer);

    // 2-5, then the fallbacks in turn while the models fail.
    const chain = new FallbackChain(deps, ctx, service, { client: clientBody, chat: input.body });
    let outcome = await fromBackends(request, { client: clientBody, chat: input.body }, lookup);
    while (!("answer" in outcome)) {
      const next = outcome.reason ? chain.next(outcome.reason) : undefined;
      if (!next) break;
      deps.metrics.fallback(service.type, request.service.model, next.service.model, outcome.reason!);
      deps.log.info("llm_fallback", { model: request.service.model, fallback: next.service.model, reason: outcome.reason, status: outcome.failure.status });
      request = requestFor(next.service, next.provider);
      outcome = await fromBackends(request, next.bodies, lookup);
    }
    const answer = "answer" in outcome ? outcome.answer : await failed(request, outcome, lookup);
    answer.response.headers.set(modelHeader, request.service.model);
    answered = answer;
    await opened?.settled?.();

    // 5. Metrics and tokens: a stream is counted when it ends (its duration is the whole stream),
    //    its tokens only with llm.count_streamed_tokens (see stream-end.ts).
    if ("answer" in outcome) {
      const { status } = outcome;
      if (request.stream && status >= 200 && status <= 299) ctx.defer(() => accounting.request(ctx, request.labels, status));
      else accounting.answered(ctx, request.labels, answer, status);
    }

    // 7. Cache fill once the response is written.
    fillCache(ctx, lookup, answer.stored);

    // 6. The response (its `X-Cache: MISS` was set when it was built).
    return answer.response;
  }

  return {
    mode: "llm",
    accepts: (service, body) => service.provider !== "" && body.kind === "json",
    check(ctx, body) {
      if (body.kind !== "json") return;
      const problem = deps.protocols.forPath(ctx.url.pathname).shapeProblem?.(body.value);
      if (problem !== undefined) throw errors.badRequest(problem);
    },
    prepare(ctx, body) {
      // When an input hook may change the request, the lookup waits for it (a masked request is looked up as masked).
      if (!ctx.service || body.kind !== "json" || deps.hooks.mayReadInput(ctx.service.model || String(body.value.model ?? ""))) return;
      ctx.vars.llmCacheLookup = beginLookup(deps, ctx, ctx.service, body);
    },
    handle,
  };
}
