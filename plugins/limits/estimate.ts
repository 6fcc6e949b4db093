/**
 * What an LLM request may use, as its budgets would count it (core/llm/estimate.ts guesses the
 * tokens): the tokens for token budgets, and the cost of those tokens at the model's price for
 * dollar budgets. A model may be sent to backends priced differently and which one answers is
 * known only afterwards, so the dearest of them is taken. None when the answer will not be
 * counted: `Cache-Control: no-cache`, a stream without `llm.count_streamed_tokens`, a body
 * that is not JSON.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { estimateUsage } from "../../core/llm/estimate.ts";
import { countedRequest, type TokenUsage } from "../../core/llm/usage.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { type Pricing, toNanos } from "../../core/pricing/price.ts";
import type {} from "../../core/proxy/modes.ts";
import type { LimitDeps } from "./deps.ts";

/** A request's estimated usage: what it holds of each budget while it runs. */
export interface Claim {
  tokens: number;
  /** In nano-units of pricing.currency; 0 when the model has no price. */
  nanos: number;
}

export function claimOf(deps: LimitDeps, ctx: RequestContext, service: ServiceConfig): Claim | undefined {
  const body = ctx.vars.syncBody;
  if (body?.kind !== "json" || !countedRequest(ctx.request.headers)) return undefined;
  if (body.value.stream === true && !deps.countStreamedTokens) return undefined;
  const usage = estimateUsage(body.value, body.bytes.byteLength, ctx.url.pathname);
  return {
    tokens: usage.prompt_tokens + usage.completion_tokens,
    nanos: deps.pricing ? dearest(deps.pricing, ctx.serviceType, service, body.value, usage) : 0,
  };
}

/** The highest price of `usage` among the models the request may be sent as (the LLM proxy's model rewrite). */
function dearest(pricing: Pricing, serviceType: string, service: ServiceConfig, body: Readonly<Record<string, unknown>>, usage: TokenUsage): number {
  const requested = typeof body.model === "string" ? body.model : service.model;
  const rewrites = service.backends.length > 0 ? service.backends.map((backend) => backend.model || service.backend_model) : [service.backend_model];
  const priced = { prompt: usage.prompt_tokens, completion: usage.completion_tokens };
  let most = 0;
  for (const backendModel of new Set(rewrites.map((rewrite) => rewrite || requested))) {
    const cost = pricing.quote({ serviceType, model: service.model || requested, backendModel }, priced);
    if (cost !== undefined) most = Math.max(most, toNanos(cost));
  }
  return most;
}
