/**
 * The request pipeline. The core owns the order; plugins only contribute steps to a stage.
 *
 *   identify  -> who is calling (principal: consumer, user type, groups)
 *   admit     -> checks that must run before the body is read (async: an idempotent
 *                replay, then request rate, processing time, concurrent jobs;
 *                docs/design.md#job-submission; a replay creates nothing, so no limit applies to
 *                it, docs/design.md#idempotency)
 *   resolve   -> the mode reads what it needs of the body and resolves the model
 *   visibility-> hidden models answer 404 (docs/design.md#model-visibility)
 *   policy    -> access policies answer 403 (docs/design.md#access-policies)
 *   limits    -> sync: rate limit, token limit, concurrency cap, in that order
 *                (docs/design.md#check-order)
 *   handler   -> the mode's handler produces the response
 *
 * A step either passes (returns nothing, possibly adding to the context) or answers with
 * a Response, which ends the request.
 */
import type { Logger } from "../log.ts";
import { GatewayError, toErrorResponse } from "../errors.ts";
import { endBeforeLastByte } from "./answer-end.ts";
import { keepEndHook } from "./end-hook.ts";
import type { RequestContext, RequestState } from "./context.ts";
import { isWhole, wholeBody } from "./whole-body.ts";

export const STAGES = ["identify", "admit", "resolve", "visibility", "policy", "limits", "handler"] as const;
export type StageName = (typeof STAGES)[number];
/** The stages plugins may add steps to; `resolve` and `handler` belong to the mode. */
export type StepStage = Exclude<StageName, "resolve" | "handler">;
export const STEP_STAGES: readonly StepStage[] = ["identify", "admit", "visibility", "policy", "limits"];

export type StageResult = Response | undefined | void;
export type StageStep = (ctx: RequestContext) => StageResult | Promise<StageResult>;

/** What a mode (sync proxy, LLM proxy, async jobs) brings to a request. */
export interface ModeHandlers {
  resolve: StageStep;
  handle: (ctx: RequestContext) => Response | Promise<Response>;
}

export class Pipeline {
  private readonly steps = new Map<StepStage, StageStep[]>(STEP_STAGES.map((s) => [s, []]));

  constructor(private readonly log: Logger) {}

  add(stage: StepStage, step: StageStep): void {
    const list = this.steps.get(stage);
    if (!list) throw new Error(`unknown pipeline stage "${stage}"; stages: ${STEP_STAGES.join(", ")}`);
    list.push(step);
  }

  /** Runs one request through every stage. Never throws: failures become error responses. */
  async run(ctx: RequestState, mode: ModeHandlers): Promise<Response> {
    let response: Response;
    try {
      response = await this.runStages(ctx, mode);
    } catch (error) {
      if (!(error instanceof GatewayError)) {
        this.log.error("request_failed", { path: ctx.url.pathname, error });
      }
      response = wholeBody(toErrorResponse(error));
    }
    return await finish(response, ctx, ctx.finalizers, this.log);
  }

  private async runStages(ctx: RequestState, mode: ModeHandlers): Promise<Response> {
    for (const stage of STAGES) {
      ctx.stage = stage;
      // A request the gateway sent itself runs as the principal it was given (PluginApi.dispatchAs).
      if (stage === "identify" && ctx.origin !== "client") continue;
      if (stage === "resolve") {
        const answered = await mode.resolve(ctx);
        if (answered) return answered;
      } else if (stage === "handler") {
        return await mode.handle(ctx);
      } else {
        // Steps are awaited only when they return a promise: most stages have no step or a
        // synchronous one, and every await is a turn of the microtask queue per request.
        for (const step of this.steps.get(stage) ?? []) {
          const result = step(ctx);
          const answered = result instanceof Response || result === undefined ? result : await result;
          if (answered) return answered;
        }
      }
    }
    throw new Error("unreachable: the handler stage always answers");
  }

  /**
   * The steps of one stage on their own: the first answer, or undefined when every step
   * passed. For endpoints that are not one model's request: `GET /v1/models` runs
   * `identify` once, then asks `visibility` about each model (with `ctx.service` set to
   * it), so the audience rule lives in one visibility step for listing and requests alike.
   */
  async runStage(stage: StepStage, ctx: RequestContext): Promise<Response | undefined> {
    if (stage === "identify" && ctx.origin !== "client") return undefined;
    for (const step of this.steps.get(stage) ?? []) {
      const answered = await step(ctx);
      if (answered) return answered;
    }
    return undefined;
  }
}

async function runAll(finalizers: Array<() => void | Promise<void>>, log: Logger): Promise<void> {
  for (const fn of finalizers.splice(0)) {
    try {
      await fn();
    } catch (error) {
      log.error("request_finalizer_failed", { error });
    }
  }
}

/** The context's response headers on the response: set in place when its headers are mutable, else on a copy. */
function withResponseHeaders(response: Response, ctx: RequestState): Response {
  try {
    ctx.responseHeaders.forEach((value, key) => response.headers.set(key, value));
    return response;
  } catch {
    // Immutable headers (a Response straight from fetch): copy once.
    const headers = new Headers(response.headers);
    ctx.responseHeaders.forEach((value, key) => headers.set(key, value));
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}

/**
 * Adds the context's response headers, has the `beforeEnd` steps done before the client can
 * have the whole answer (answer-end.ts), and, when there are finalizers, runs them once the
 * body has been fully sent or the client went away (work nobody waits for: a cache fill, a
 * stream's duration metric). When the server adapter says when the response is done
 * (`ctx.responded`), that is used; otherwise (the gateway embedded without one) the body is
 * wrapped to see its end.
 */
async function finish(response: Response, ctx: RequestState, finalizers: Array<() => void | Promise<void>>, log: Logger): Promise<Response> {
  let out = ctx.hasResponseHeaders ? withResponseHeaders(response, ctx) : response;
  if (ctx.endSteps) {
    // The mark is on the handler's Response; a copy made for the headers carries the same body.
    if (out !== response) {
      keepEndHook(response, out);
      if (isWhole(response)) wholeBody(out);
    }
    out = await endBeforeLastByte(out, ctx.endSteps.splice(0), { log, responded: ctx.responded });
  }
  if (finalizers.length === 0) return out;
  if (ctx.responded) {
    const run = () => void runAll(finalizers, log);
    ctx.responded.then(run, run);
    return out;
  }
  if (!out.body) {
    void runAll(finalizers, log);
    return out;
  }
  const reader = out.body.getReader();
  let done = false;
  const close = () => {
    if (done) return;
    done = true;
    void runAll(finalizers, log);
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (chunk.done) {
          controller.close();
          close();
        } else {
          controller.enqueue(chunk.value);
        }
      } catch (error) {
        controller.error(error);
        close();
      }
    },
    async cancel(reason) {
      close();
      await reader.cancel(reason);
    },
  });
  return new Response(body, { status: out.status, statusText: out.statusText, headers: out.headers });
}
