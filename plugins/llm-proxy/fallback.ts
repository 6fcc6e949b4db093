/**
 * Model fallbacks (step 3b of handler.ts): when every backend of a model failed (a network error
 * or a failover status, or all of them sitting out a Retry-After), the service's `fallbacks`
 * are tried in order; when the backend answered that the prompt does not fit the model's
 * context window, its `context_window_fallbacks`. A fallback is another model alias, served
 * by its own backends and providers; one the caller may not use (hidden, or denied by an
 * access policy) is skipped without a word, as if it were not listed. Each alias is tried at
 * most once per request, and the lists are the first model's (a fallback's own lists are not
 * followed). The answer names the alias that answered in `X-Gateway-Model`.
 */
import { isContextWindowError, parseJson } from "../../core/llm/provider.ts";
import type { ProviderDefinition } from "../../core/llm/provider.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { BackendHealth } from "../../core/proxy/backend-health.ts";
import type { Attempt } from "./attempts.ts";
import type { LlmModeDeps } from "./deps.ts";
import type { FallbackReason } from "./metrics.ts";
import type { JsonBody, RequestBodies } from "./protocol-route.ts";

/** The alias of the model that answered, on every answer from backends. */
export const modelHeader = "x-gateway-model";

/** A model's backends failed: the response the client gets unless a fallback answers, and whether (and why) a fallback may. */
export interface Failure {
  failure: Response;
  reason: FallbackReason | undefined;
  /** The attempt whose answer `failure` is (undefined when none answered). */
  attempt?: Attempt;
}

/** Why the answer a backend gave moves the request to a fallback: every backend failed, or the prompt is too long. */
export function failureReason(health: Pick<BackendHealth, "failsOver">, attempt: Attempt, response: Response): FallbackReason | undefined {
  if (health.failsOver(response.status)) return "unavailable";
  if (response.status !== 400 && response.status !== 413) return undefined;
  const text = attempt.received ? new TextDecoder().decode(attempt.received) : "";
  const body = parseJson(text) ?? text;
  return (attempt.provider.isContextWindowError ?? isContextWindowError)(response.status, body) ? "context_window" : undefined;
}

/** What the LLM mode needs to find a fallback: the model an alias names, and whether the caller may use it. */
export interface FallbackModels {
  /** The LLM service `alias` names, seen from `from` (its service type first). */
  find(from: ServiceConfig, alias: string): ServiceConfig | undefined;
  /** Visibility and access policies, as for a request that named the model itself. */
  mayUse(ctx: RequestContext, service: ServiceConfig): boolean;
}

export interface Fallback {
  service: ServiceConfig;
  provider: ProviderDefinition;
  /** The request's bodies, their `model` now the fallback's alias. */
  bodies: RequestBodies;
}

export class FallbackChain {
  private readonly tried = new Set<string>();

  constructor(
    private readonly deps: Pick<LlmModeDeps, "providers" | "fallbackModels">,
    private readonly ctx: RequestContext,
    private readonly first: ServiceConfig,
    private readonly bodies: RequestBodies,
  ) {
    this.tried.add(first.model);
  }

  /** The next model to try for `reason`, or undefined when the list is used up. */
  next(reason: FallbackReason): Fallback | undefined {
    const { deps, first } = this;
    const aliases = (reason === "context_window" ? first.context_window_fallbacks : first.fallbacks) ?? [];
    for (const alias of aliases) {
      if (this.tried.has(alias)) continue;
      this.tried.add(alias);
      const service = deps.fallbackModels.find(first, alias);
      if (!service || !deps.fallbackModels.mayUse(this.ctx, service)) continue;
      const provider = deps.providers.get(service.provider);
      if (!provider) continue;
      const { client, chat } = this.bodies;
      return { service, provider, bodies: { client: withModel(client, alias), chat: chat && withModel(chat, alias) } };
    }
    return undefined;
  }
}

/** A body that named the first model names the fallback (a body without `model` gets the fallback's alias from the rewrite). */
function withModel(body: JsonBody, alias: string): JsonBody {
  if (typeof body.value.model !== "string") return body;
  const value = { ...body.value, model: alias };
  return { ...body, value, bytes: new TextEncoder().encode(JSON.stringify(value)) };
}
