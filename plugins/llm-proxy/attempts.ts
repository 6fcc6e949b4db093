/**
 * Attempt and failover: one prepared request per backend (model rewrite, the provider's request
 * translation), sent in turn until one answers (headers `inference_headers` then
 * `backends[].headers`; failover on a network error or a failover status), and the answer the
 * client gets when none did.
 */
import { UntranslatableRequest } from "../../core/llm/client-protocol.ts";
import type { Bytes } from "../../core/llm/json.ts";
import type { Translator, TranslatorContext } from "../../core/llm/provider.ts";
import { type OpenedStream, openStream } from "../../core/llm/stream.ts";
import { errorResponse, errors } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { BackendTimeoutError, backendUrl, callBackend, callBackendWhole } from "../../core/proxy/backend-call.ts";
import { type BackendTarget, type FailoverResult, withFailover } from "../../core/proxy/backends.ts";
import { forwardHeaders } from "../../core/proxy/headers.ts";
import type { LlmModeDeps, LlmRequest } from "./deps.ts";
import { attemptTranslator, type JsonBody, routedPath } from "./protocol-route.ts";
import { backendBody } from "./request-body.ts";

/**
 * Not forwarded: the runtime's fetch negotiates (and undoes) compression itself, and the body
 * is always JSON the gateway wrote.
 */
const NOT_FORWARDED = ["accept-encoding", "content-type"];

export interface Attempt {
  target: BackendTarget;
  translator: Translator;
  url: string;
  body: Bytes;
  /** A non-streaming answer's body, read whole within the attempt (see `forward`). */
  received?: Bytes;
  /** A 2xx stream with its first bytes read within the attempt (see `forward`). */
  opened?: OpenedStream;
}

type AttemptDeps = Pick<LlmModeDeps, "clock" | "newId" | "fetch" | "backendTimeoutMs" | "health" | "log">;

/** One prepared request per target, so a request the provider cannot express fails once, with 400, before anything is sent. */
export function prepareAttempts(deps: AttemptDeps, request: LlmRequest, body: JsonBody, targets: readonly BackendTarget[]): Attempt[] {
  const { ctx, service, provider, route, stream } = request;
  const clientPath = routedPath(route, ctx.url.pathname);
  const path = `${provider.backendPath?.(clientPath) ?? clientPath}${ctx.url.search}`;
  const context: TranslatorContext = { stream, now: () => deps.clock.now(), newId: deps.newId };
  return targets.map((target) => {
    const translator = attemptTranslator(route, provider, context);
    try {
      // A native body gets the model rewrite alone (no chat `stream_options`).
      return { target, translator, url: backendUrl(target.url, path), body: backendBody(body, target, service.model, stream && !route.native, translator) };
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

/** The attempts in turn until a backend answers (a failover status or a network error tries the next). */
export async function forward(deps: AttemptDeps, ctx: RequestContext, attempts: Attempt[], stream: boolean): Promise<Forwarded> {
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
      // tried.
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

/** The answer when no backend answered: the client left (499, for the counters), a timeout (504), or every backend failed (502). */
export function noAnswer({ ctx, service }: LlmRequest, result: FailoverResult): Response {
  const tried = result.failures.map((f) => `${f.target.url}: ${f.reason}`).join("; ");
  // Nobody reads this; the status is for the counters and logs (nginx's 499).
  if (ctx.clientGone.aborted) return errorResponse(499, "api_error", "the client closed the request before a backend answered", {}, "client_closed");
  if (result.error instanceof BackendTimeoutError) {
    return errors.gatewayTimeout(`the backend for model "${service.model}" did not answer in time: ${tried}`).toResponse();
  }
  return errors.badGateway(`no backend for model "${service.model}" answered: ${tried}`).toResponse();
}
