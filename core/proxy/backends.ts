/**
 * Backend selection and failover, shared by the sync direct proxy and the LLM proxy
 * (docs/design.md#backend-routing):
 *  1. one backend picked by weighted random among those with weight > 0;
 *  2. on a network error or a 5xx the next is tried: the remaining weight > 0 backends by
 *     descending weight, then the weight = 0 (fallback-only) ones;
 *  3. a 2xx or 4xx ends the loop and is returned as is.
 * With a `BackendHealth` (backend-health.ts) the statuses of step 2 are its failover list
 * (429 among them by default), backends sitting out are skipped, and its retry rounds may
 * follow a pass in which every backend failed.
 */
import type { BackendConfig, ServiceConfig } from "../config/schema.ts";
import { type FailoverRoute, type RetryRounds, SPEC_FAILOVER } from "./backend-health.ts";
import type { ClientGone } from "./client-gone.ts";

export interface BackendTarget {
  /** Base address; the request path is appended. */
  url: string;
  /** The model name to send ("" = keep the client's). `backends[].model`, else `backend_model`. */
  model: string;
  /** `inference_headers` overridden by `backends[].headers`. */
  headers: Readonly<Record<string, string>>;
  weight: number;
  /** The backend's provider: `backends[].provider`, else the service's ("" for a service that is no LLM one). */
  provider: string;
  /** The backend's own settings, as configured (one object per backend and config: a provider may key per-backend state on it). */
  settings: BackendSettings;
}

/** What a provider may read of a backend's entry (`services[].backends[]`, strings env-expanded). */
export type BackendSettings = Readonly<
  Pick<BackendConfig, "url" | "model" | "api_key" | "region" | "project" | "location" | "credentials_file" | "resource" | "deployment" | "api_version">
>;

const NO_SETTINGS = { api_key: "", region: "", project: "", location: "", credentials_file: "", resource: "", deployment: "", api_version: "" } as const;

/** What a service's backend list compiles to, once per config (services are immutable per runtime). */
interface Compiled {
  primaries: BackendTarget[];
  fallbacks: BackendTarget[];
  total: number;
}

const compiledTargets = new WeakMap<ServiceConfig, Compiled>();
const singleTargets = new WeakMap<ServiceConfig, readonly BackendTarget[]>();

function compile(service: ServiceConfig, addressOf: ((backend: BackendConfig) => string) | undefined): Compiled {
  let compiled = compiledTargets.get(service);
  if (!compiled) {
    const targets = service.backends.map((b) => ({
      url: b.url || (addressOf?.(b) ?? ""),
      model: b.model || service.backend_model,
      headers: { ...service.inference_headers, ...b.headers },
      weight: b.weight,
      provider: b.provider || service.provider,
      settings: b,
    }));
    const primaries = targets.filter((t) => t.weight > 0);
    compiled = { primaries, fallbacks: targets.filter((t) => t.weight === 0), total: primaries.reduce((sum, t) => sum + t.weight, 0) };
    compiledTargets.set(service, compiled);
  }
  return compiled;
}

/**
 * The order in which backends are tried for one request. `defaultUrl` is the provider's
 * default address; `addressOf` the address of a backend configured without `url` (its
 * provider's, which it builds from the backend's settings). The targets are built once per
 * service; only the order is per request.
 */
export function backendOrder(
  service: ServiceConfig,
  random: () => number = Math.random,
  defaultUrl = "",
  addressOf?: (backend: BackendConfig) => string,
): readonly BackendTarget[] {
  if (service.backends.length === 0) {
    const url = service.inference_url || defaultUrl;
    if (url === "") return [];
    // Cached only when it does not depend on the caller's default address.
    const cached = service.inference_url !== "" ? singleTargets.get(service) : undefined;
    if (cached) return cached;
    const settings = Object.freeze({ ...NO_SETTINGS, url: service.inference_url, model: service.backend_model });
    const single = Object.freeze([
      Object.freeze({ url, model: service.backend_model, headers: service.inference_headers, weight: 1, provider: service.provider, settings }),
    ]);
    if (service.inference_url !== "") singleTargets.set(service, single);
    return single;
  }
  const { primaries, fallbacks, total } = compile(service, addressOf);
  let first: BackendTarget | undefined;
  let point = random() * total;
  for (const target of primaries) {
    point -= target.weight;
    if (point < 0) {
      first = target;
      break;
    }
  }
  first ??= primaries[primaries.length - 1];
  if (primaries.length === 1 && fallbacks.length === 0) return [first];
  const rest = primaries.filter((t) => t !== first).sort((a, b) => b.weight - a.weight);
  return [...(first ? [first] : []), ...rest, ...fallbacks];
}

/** What one attempt produced: a response (any status) or a network-level failure. */
export type AttemptOutcome = { response: Response } | { error: Error };

export interface FailoverResult {
  /** The response to return: the first that does not fail over, else the last failing one (undefined when every attempt failed at the network level). */
  response?: Response;
  target?: BackendTarget;
  /** Network errors and failing statuses of the attempts that were passed over, in order. */
  failures: Array<{ target: BackendTarget; reason: string }>;
  /** The last network error when no backend answered at all. */
  error?: Error;
}

/** Whether a retry round may start now, `delayMs` from now, within the request's budget. */
function roundFits(retry: RetryRounds, startedAt: number, delayMs: number): boolean {
  return retry.now() - startedAt + delayMs < retry.deadlineMs;
}

/**
 * Tries `targets` (a service's whole backend list, in failover order) with `attempt` until
 * one answers with a status that does not fail over. The route's health skips the backends
 * sitting out and hears every outcome. A passed-over body is cancelled so its connection is
 * released. Stops early when `signal` aborts; the attempt that the abort cancelled is not a
 * failure (nothing is logged as a failover, nothing recorded).
 * With the health's `retry` rounds, a pass in which every backend failed is followed by a
 * wait and another pass (the backends sitting out by then skipped again), while rounds are
 * left and the wait ends within the request's budget; a later round also stops at the budget.
 * No round starts that would call a backend before the Retry-After it sent (all of them sit one out).
 */
export async function withFailover(
  targets: readonly BackendTarget[],
  attempt: (target: BackendTarget) => Promise<Response>,
  signal?: ClientGone,
  route: FailoverRoute = { health: SPEC_FAILOVER, serviceType: "" },
): Promise<FailoverResult> {
  const { health, serviceType } = route;
  const retry = health.retry;
  const startedAt = retry?.now() ?? 0;
  const failures: FailoverResult["failures"] = [];
  // The latest failing answer: the client's when every attempt fails. It is listed among the
  // failures only once another attempt passes it over.
  let last: { response: Response; target: BackendTarget; listed: boolean } | undefined;
  let error: Error | undefined;
  for (let round = 1;; round++) {
    for (const target of health.available(serviceType, targets)) {
      if (signal?.aborted || (retry && round > 1 && !roundFits(retry, startedAt, 0))) break;
      if (last && !last.listed) {
        failures.push({ target: last.target, reason: `HTTP ${last.response.status}` });
        last.listed = true;
      }
      try {
        const response = await attempt(target);
        const fails = health.failsOver(response.status);
        health.record(
          serviceType,
          targets,
          target,
          fails ? { ok: false, status: response.status, retryAfter: response.headers.get("retry-after") } : { ok: true },
        );
        if (last) await last.response.body?.cancel().catch(() => {});
        if (!fails) return { response, target, failures };
        last = { response, target, listed: false };
      } catch (caught) {
        error = caught instanceof Error ? caught : new Error(String(caught));
        // The client went away: the attempt was cancelled, the backend did not fail.
        if (signal?.aborted) break;
        health.record(serviceType, targets, target, { ok: false });
        failures.push({ target, reason: error.message });
      }
    }
    if (signal?.aborted || !retry || round >= retry.rounds) break;
    const delay = retry.delayMs(round);
    if (!roundFits(retry, startedAt, delay)) break;
    // Every backend asked for a pause that outlasts the wait: the next round would ignore it.
    if ((health.waitingOutRetryAfter(targets) ?? 0) > delay) break;
    retry.started(serviceType);
    await retry.wait(delay, signal);
  }
  if (last) return { response: last.response, target: last.target, failures };
  return { failures, error };
}
