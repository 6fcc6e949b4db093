/**
 * Attempt and failover: one prepared request per backend, each for the backend's own provider
 * (model rewrite, the client protocol's and the provider's request translation), sent in turn
 * until one answers (headers `inference_headers` then `backends[].headers`, then the
 * provider's `authorize`; failover on a network error or a failover status), and the answer
 * the client gets when none did.
 */
import { UntranslatableRequest } from "../../core/llm/client-protocol.ts";
import type { Bytes } from "../../core/llm/json.ts";
import { parseJson } from "../../core/llm/json.ts";
import type { BackendCall, ProviderDefinition, Translator, TranslatorContext } from "../../core/llm/provider.ts";
import { type OpenedStream, openStream } from "../../core/llm/stream.ts";
import { bodyChunks } from "../../core/proxy/body-chunks.ts";
import { errorResponse, errors } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { BackendTimeoutError, backendUrl, callBackend, callBackendWhole } from "../../core/proxy/backend-call.ts";
import { type BackendTarget, type FailoverResult, withFailover } from "../../core/proxy/backends.ts";
import { forwardHeaders } from "../../core/proxy/headers.ts";
import type { LlmModeDeps, LlmRequest } from "./deps.ts";
import { guardedRoute } from "./hooked-request.ts";
import { attemptTranslator, type JsonBody, type ProtocolRoute, protocolRoute, providerBody, type RequestBodies, routedPath } from "./protocol-route.ts";
import { backendBody, sentModel } from "./request-body.ts";

/**
 * Not forwarded: the runtime's fetch negotiates (and undoes) compression itself, and the body
 * is always JSON the gateway wrote.
 */
const NOT_FORWARDED = ["accept-encoding", "content-type"];

export interface Attempt {
  target: BackendTarget;
  /** The backend's provider, and how the client's protocol travels to it. */
  provider: ProviderDefinition;
  route: ProtocolRoute;
  translator: Translator;
  /** What the provider's request hooks are told. */
  call: BackendCall;
  body: Bytes;
  /** Where it was sent (set when the attempt ran), for the logs and the 502. */
  url?: string;
  /** A non-streaming answer's body, or any error answer's, read whole within the attempt (see `forward`). */
  received?: Bytes;
  /** A 2xx stream with its first bytes read within the attempt (see `forward`). */
  opened?: OpenedStream;
}

type AttemptDeps = Pick<LlmModeDeps, "clock" | "newId" | "fetch" | "backendTimeoutMs" | "health" | "log" | "providers">;

/** The provider of a target (the config check made sure it is registered). */
export function providerOf(deps: Pick<LlmModeDeps, "providers">, target: BackendTarget, fallback: ProviderDefinition): ProviderDefinition {
  return (target.provider !== "" ? deps.providers.get(target.provider) : undefined) ?? fallback;
}

/** One prepared request per target, so a request a provider cannot express fails once, with 400, before anything is sent. */
export function prepareAttempts(deps: AttemptDeps, request: LlmRequest, given: RequestBodies, targets: readonly BackendTarget[]): Attempt[] {
  const { ctx, service, stream } = request;
  const context: TranslatorContext = { stream, now: () => deps.clock.now(), newId: deps.newId };
  // The client's body, and its chat-completions translation (the input hooks' when they made
  // it, else made once here when needed): shared by every backend that takes the same one.
  const bodies = new Map<boolean, JsonBody>([[true, given.client]]);
  if (given.chat) bodies.set(false, given.chat);
  return targets.map((target) => {
    const provider = providerOf(deps, target, request.provider);
    const route = {
      ...guardedRoute(protocolRoute(request.route.protocol, provider), provider, request.hooks, ctx, service, given.client),
      routedPath: request.route.routedPath,
    };
    let body = bodies.get(route.native);
    if (!body) {
      body = providerBody({ ...request, provider, route }, given.client);
      bodies.set(route.native, body);
    }
    const clientPath = routedPath(route, ctx.url.pathname);
    const path = `${provider.backendPath?.(clientPath) ?? clientPath}${ctx.url.search}`;
    const call: BackendCall = { backend: target.settings, model: sentModel(body.value, target, service.model), stream, path };
    const translator = attemptTranslator(route, provider, context);
    try {
      // A native body gets the model rewrite alone (no chat `stream_options`).
      return { target, provider, route, translator, call, body: backendBody(body, target, service.model, stream && !route.native, translator) };
    } catch (error) {
      if (error instanceof UntranslatableRequest) {
        throw errors.badRequest(`the request cannot be sent to provider "${provider.name}": ${error.message}`);
      }
      throw error;
    }
  });
}

export interface Forwarded {
  result: FailoverResult;
  /** The attempt that answered, if one did. */
  attempt: Attempt | undefined;
}

/** The address an attempt goes to: the provider's `requestUrl`, else the backend's (or the provider's default) address and the path. */
function urlOf(attempt: Attempt): string {
  const { provider, call, target } = attempt;
  return provider.requestUrl?.(call) ?? backendUrl(target.url || provider.defaultUrl, call.path);
}

/** An error answer that gives its wait only in the body (Gemini's RetryInfo) gets it as a `Retry-After` header, for the client and the backend's health. */
function withRetryAfter(response: Response, attempt: Attempt): Response {
  const { provider } = attempt;
  if (!provider.retryAfter || response.status < 400 || response.headers.has("retry-after") || !attempt.received) return response;
  const text = new TextDecoder().decode(attempt.received);
  const wait = provider.retryAfter(response.status, parseJson(text) ?? text);
  if (wait === undefined) return response;
  const headers = new Headers(response.headers);
  headers.set("retry-after", wait);
  return new Response(null, { status: response.status, statusText: response.statusText, headers });
}

/** The attempts in turn until a backend answers (a failover status or a network error tries the next). */
export async function forward(deps: AttemptDeps, ctx: RequestContext, attempts: Attempt[], stream: boolean): Promise<Forwarded> {
  const byTarget = new Map(attempts.map((a) => [a.target, a]));
  const result = await withFailover(
    attempts.map((a) => a.target),
    async (target) => {
      const attempt = byTarget.get(target) as Attempt;
      const url = urlOf(attempt);
      attempt.url = url;
      let headers = forwardHeaders(ctx.request.headers, target.headers, NOT_FORWARDED, ctx.backendHeaders);
      headers["content-type"] = "application/json";
      if (attempt.provider.authorize) headers = await attempt.provider.authorize({ url, headers, body: attempt.body }, attempt.call);
      const init = { method: "POST", headers, body: attempt.body };
      const options = { fetch: deps.fetch, timeoutMs: deps.backendTimeoutMs, clientSignal: ctx.clientGone };
      if (stream) {
        const response = await callBackend(url, init, options);
        // The client's status and headers wait for the stream's first bytes, so a stream that
        // breaks off, ends or stalls before them is this attempt's failure and fails over like
        // any failed call. From its first bytes on, a stream is the client's.
        const chunks = response.status >= 200 && response.status <= 299 ? bodyChunks(response) : undefined;
        if (chunks) {
          attempt.opened = await openStream(chunks, deps.backendTimeoutMs);
          return response;
        }
        // An error answer is small: read now, so what it says (a wait, a too-long prompt) is known before the next step.
        attempt.received = new Uint8Array(await response.arrayBuffer());
        return withRetryAfter(response, attempt);
      }
      // A non-streaming answer is read whole before anything goes to the client, so a backend
      // that breaks off or stalls mid-body is this attempt's failure and the next backend is
      // tried.
      const whole = await callBackendWhole(url, init, options);
      attempt.received = whole.body;
      return withRetryAfter(whole.response, attempt);
    },
    ctx.clientGone,
    { health: deps.health, serviceType: ctx.service?.type ?? ctx.serviceType },
  );
  if (result.failures.length > 0) {
    deps.log.warn("llm_backend_failover", {
      model: ctx.service?.model,
      failures: result.failures.map((f) => ({ url: addressOf(byTarget, f.target), reason: f.reason })),
      answered_by: result.target ? addressOf(byTarget, result.target) : undefined,
    });
  }
  return { result, attempt: result.target ? byTarget.get(result.target) : undefined };
}

/** Where a target's attempt went (a backend without `url` goes to an address its provider built). */
function addressOf(byTarget: ReadonlyMap<BackendTarget, Attempt>, target: BackendTarget): string {
  return target.url || (byTarget.get(target)?.url ?? "");
}

/** The answer when no backend answered: the client left (499, for the counters), a timeout (504), or every backend failed (502). */
export function noAnswer({ ctx, service }: LlmRequest, result: FailoverResult, attempts: readonly Attempt[]): Response {
  const byTarget = new Map(attempts.map((a) => [a.target, a]));
  const tried = result.failures.map((f) => `${addressOf(byTarget, f.target)}: ${f.reason}`).join("; ");
  // Nobody reads this; the status is for the counters and logs (nginx's 499).
  if (ctx.clientGone.aborted) return errorResponse(499, "api_error", "the client closed the request before a backend answered", {}, "client_closed");
  if (result.error instanceof BackendTimeoutError) {
    return errors.gatewayTimeout(`the backend for model "${service.model}" did not answer in time: ${tried}`).toResponse();
  }
  return errors.badGateway(`no backend for model "${service.model}" answered: ${tried}`).toResponse();
}
