/**
 * Accounting of an answer: the request metrics, and for an answer with usage the token metrics,
 * the consumer's tokens, the cost (header and `ctx.vars.cost`) and the `llm.usage` event that
 * the limits (budget holds settle on it) and usage plugins hear.
 */
import { countedRequest, type TokenUsage } from "../../core/llm/usage.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { COST_HEADER, formatCost } from "../../core/pricing/price.ts";
import type { Answer } from "./answer.ts";
import type { LlmModeDeps } from "./deps.ts";
import { operationOf } from "./genai.ts";
import type { LlmLabels } from "./metrics.ts";

type AccountingDeps = Pick<LlmModeDeps, "clock" | "metrics" | "genAiTokens" | "tokens" | "pricing" | "emitUsage">;

export class Accounting {
  constructor(private readonly deps: AccountingDeps) {}

  /** Seconds since the request came in. */
  seconds(ctx: RequestContext): number {
    return (this.deps.clock.now() - ctx.startedAt) / 1000;
  }

  /** The request metrics of an answer with `status` (a stream's when it ends: its duration is the whole stream). */
  request(ctx: RequestContext, labels: LlmLabels, status: number): void {
    this.deps.metrics.request(labels, status, this.seconds(ctx));
  }

  /** A complete answer: its request metrics and, when it reported usage, its tokens. */
  answered(ctx: RequestContext, labels: LlmLabels, answer: Answer, status: number): void {
    this.request(ctx, labels, status);
    if (!answer.usage) return;
    const cost = this.countTokens(ctx, labels, answer.usage);
    // Only a whole answer can carry its cost in a header (a stream's headers left long before its usage).
    if (cost !== undefined) answer.response.headers.set(COST_HEADER, formatCost(cost));
  }

  /** Metrics, consumer tokens, the cost and the `llm.usage` event of an answer's usage; the cost when priced. */
  countTokens(ctx: RequestContext, labels: LlmLabels, usage: TokenUsage): number | undefined {
    const { deps } = this;
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
      origin: ctx.origin,
    });
    return cost;
  }
}
