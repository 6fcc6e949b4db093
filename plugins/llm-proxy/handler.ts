/**
 * The LLM proxy mode, in its processing order, each step in its own file:
 *
 *   1. cache lookup (non-streaming)            -> a hit answers with `X-Cache: HIT`
 *   2. backend list                            -> backendOrder, the provider's default address;
 *                                                 all sitting out a Retry-After -> 429 at once
 *   3. per backend: model rewrite, headers (`inference_headers` then `backends[].headers`),
 *      request translation, forward            -> failover on a network error or a failover
 *                                                 status (attempts.ts)
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
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors, GatewayError } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { backendOrder, type BackendTarget } from "../../core/proxy/backends.ts";
import type { SyncBody, SyncMode } from "../../core/proxy/modes.ts";
import { Accounting } from "./accounting.ts";
import { type Answer, backendAnswer, MISS } from "./answer.ts";
import { forward, noAnswer, prepareAttempts } from "./attempts.ts";
import { beginLookup, cachedResponse, fillCache, lookUp } from "./cache-step.ts";
import type { LlmModeDeps, LlmRequest } from "./deps.ts";
import { genAiSpanAttributes, operationOf } from "./genai.ts";
import { type JsonBody, openRequest, protocolRoute, providerBody } from "./protocol-route.ts";

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

export function createLlmMode(deps: LlmModeDeps): SyncMode {
  const accounting = new Accounting(deps);

  /** Every backend asked for a pause (a Retry-After): refused at once rather than calling one early. */
  function retryAfterRefusal(request: LlmRequest, targets: readonly BackendTarget[], body: JsonBody): Response | undefined {
    const waitMs = deps.health.waitingOutRetryAfter(targets);
    if (waitMs === undefined) return undefined;
    const { ctx, service, labels } = request;
    labels.backend_model = backendModelOf(targets[0], body.value, service.model);
    const refusal = errors.retryAfterRefusal(
      `every backend of model "${service.model}" is sitting out the Retry-After it sent; retry in ${Math.ceil(waitMs / 1000)}s`,
      waitMs / 1000,
      MISS,
    );
    deps.metrics.retryAfterRefusal(labels);
    accounting.request(ctx, labels, refusal.status);
    return refusal.toResponse();
  }

  /** Steps 3 to 5 once the cache missed (or was bypassed): backends in turn, the answer, its accounting. */
  async function fromBackends(request: LlmRequest, body: JsonBody, lookup: CacheLookup): Promise<Answer | Response> {
    const { ctx, service, provider, labels } = request;
    // 2. Backend list.
    const targets = backendOrder(service, deps.random, provider.defaultUrl);
    if (targets.length === 0) {
      throw errors.badGateway(`model "${service.model}" has no backend: set inference_url or backends[] (provider "${provider.name}" has no default address)`);
    }
    const refusal = retryAfterRefusal(request, targets, body);
    if (refusal) return refusal;

    // 3. Per backend, with failover.
    const attempts = prepareAttempts(deps, request, body, targets);
    const { result, attempt } = await forward(deps, ctx, attempts, request.stream);
    if (!result.response || !attempt) {
      labels.backend_model = backendModelOf(attempts[attempts.length - 1]?.target, body.value, service.model);
      const failure = noAnswer(request, result);
      accounting.request(ctx, labels, failure.status);
      return withCacheHeader(failure, "MISS");
    }
    labels.backend_model = backendModelOf(attempt.target, body.value, service.model);
    const backend = result.response;

    // 4. The answer, translated back.
    let answer: Answer;
    try {
      answer = await backendAnswer(deps, accounting, request, backend, attempt, lookup);
    } catch (error) {
      accounting.request(ctx, labels, error instanceof GatewayError ? error.status : 500);
      throw error;
    }

    // 5. Metrics and tokens: a stream is counted when it ends (its duration is the whole stream),
    //    its tokens only with llm.count_streamed_tokens (see stream-end.ts).
    if (request.stream && backend.status >= 200 && backend.status <= 299) {
      ctx.defer(() => accounting.request(ctx, labels, backend.status));
    } else {
      accounting.answered(ctx, labels, answer, backend.status);
    }
    return answer;
  }

  async function handle(ctx: RequestContext, clientBody: SyncBody): Promise<Response> {
    const service = ctx.service;
    if (!service || clientBody.kind !== "json") throw new Error("the LLM proxy got a request it does not accept");
    const provider = deps.providers.get(service.provider);
    if (!provider) throw unknownProvider(service, deps.providers);
    const registered: LlmRequest = {
      ctx,
      service,
      provider,
      route: protocolRoute(deps.protocols.forPath(ctx.url.pathname), provider),
      stream: clientBody.value.stream === true,
      labels: {
        service_type: service.type,
        model: service.model || String(clientBody.value.model ?? ""),
        backend_model: "",
        provider: service.provider,
        user_type: ctx.principal.userType ?? "",
      },
    };

    // 1. Cache lookup.
    const lookup = await lookUp(deps, ctx, service, clientBody);
    if (lookup.kind === "hit") return cachedResponse(lookup.answer);
    // A protocol that keeps state opens the request (it may refuse it: an id that is not the caller's).
    const { request, opened } = await openRequest(registered, clientBody);
    // The cache keys on what the client sent; everything after it on what the provider gets.
    const body = providerBody(request, clientBody);

    // The GenAI attributes of the request's span, computed only if it is traced, when it ends.
    // deno-lint-ignore prefer-const -- read by the span callback, which may run before the answer exists
    let answered: Answer | undefined;
    ctx.vars.spanAttributes = () =>
      genAiSpanAttributes({
        operation: operationOf(ctx.url.pathname),
        provider: service.provider,
        requestModel: request.labels.backend_model,
        answer: answered?.stored && answered.stored.status < 300 ? answered.stored.body : undefined,
        usage: answered?.usage,
      });

    const outcome = await fromBackends(request, body, lookup);
    if (outcome instanceof Response) return outcome;
    answered = outcome;
    await opened?.settled?.();

    // 7. Cache fill once the response is written.
    fillCache(ctx, lookup, outcome.stored);

    // 6. The response (its `X-Cache: MISS` was set when it was built).
    return outcome.response;
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
      if (ctx.service && body.kind === "json") ctx.vars.llmCacheLookup = beginLookup(deps, ctx, ctx.service, body);
    },
    handle,
  };
}
