/**
 * The service registry: services -> models -> operations, built once per config.
 * It answers two questions without any HTTP: "which services serve this path?" and
 * "which model does this request mean?".
 */
import type { ServiceConfig } from "../config/schema.ts";
import { errors, type GatewayError } from "../errors.ts";

/** A configured operation path, compiled for matching. */
interface Route {
  pattern: string;
  kind: "exact" | "template" | "wildcard";
  /** For templates: matches the path, capture 1 is the {model} segment. */
  regex?: RegExp;
  /** For wildcards: the prefix before "/*" (matches the prefix itself and anything under it). */
  prefix?: string;
  services: ServiceConfig[];
  /** The first of `services` with each model alias: a lookup that costs the same with 1 or 1,000 models on a path. */
  byModel: Map<string, ServiceConfig>;
}

export interface PathMatch {
  /** The configured pattern that matched (e.g. `/v1/chat/completions` or `/v2/models/{model}/infer`). */
  pattern: string;
  services: readonly ServiceConfig[];
  /** `services` by model alias (the first with each), when the match comes from the registry. */
  byModel?: ReadonlyMap<string, ServiceConfig>;
  /** The `{model}` segment, when the pattern has one. */
  modelFromPath?: string;
}

export type Resolution<T> = { ok: true; value: T } | { ok: false; error: GatewayError };

export interface JobTarget {
  service: ServiceConfig;
  operation: string;
  /** The operation's first path, appended to the backend address by the relay ("" when the model has no operations). */
  path: string;
}

const ok = <T>(value: T): Resolution<T> => ({ ok: true, value });
const fail = <T>(error: GatewayError): Resolution<T> => ({ ok: false, error });

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function compile(pattern: string): Omit<Route, "services" | "byModel"> {
  if (pattern.endsWith("/*")) return { pattern, kind: "wildcard", prefix: pattern.slice(0, -2) };
  if (pattern.includes("{model}")) {
    const source = pattern.split("{model}").map(escapeRegex).join("([^/]+)");
    return { pattern, kind: "template", regex: new RegExp(`^${source}$`) };
  }
  return { pattern, kind: "exact" };
}

/** A malformed %-escape keeps the raw segment, which then fails model resolution with a clear 404. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Which services exist for one caller, and which it may use. A service it does not `see`
 * (hidden by visibility, outside its API key's models) does not exist to it: automatic model
 * selection skips it and naming it reads like naming an unknown model. `mayUse` is narrower
 * (seen, and granted by the access policies): only those are named in an error's list, so
 * no answer names a model the caller cannot use.
 */
export interface CallerModels {
  sees(service: ServiceConfig): boolean;
  mayUse(service: ServiceConfig): boolean;
}

/** A caller from whom nothing is hidden (no access plugin active). */
export const EVERY_MODEL: CallerModels = { sees: () => true, mayUse: () => true };

/** What the caller sent, for the messages of a sync request that resolves to nothing. */
export interface SyncRequestLine {
  method: string;
  path: string;
}

function modelNames(services: readonly ServiceConfig[]): string {
  return services.map((s) => s.model).filter((m) => m !== "").join(", ") || "(none)";
}

export class Registry {
  private readonly exact = new Map<string, Route>();
  private readonly templates: Route[] = [];
  private readonly wildcards: Route[] = [];
  private readonly byType = new Map<string, ServiceConfig[]>();

  constructor(readonly services: readonly ServiceConfig[]) {
    const routes = new Map<string, Route>();
    for (const service of services) {
      const list = this.byType.get(service.type) ?? [];
      list.push(service);
      this.byType.set(service.type, list);
      for (const paths of Object.values(service.operations)) {
        for (const pattern of paths) {
          const route: Route = routes.get(pattern) ?? { ...compile(pattern), services: [], byModel: new Map<string, ServiceConfig>() };
          if (!route.services.includes(service)) route.services.push(service);
          if (!route.byModel.has(service.model)) route.byModel.set(service.model, service);
          routes.set(pattern, route);
        }
      }
    }
    for (const route of routes.values()) {
      if (route.kind === "exact") this.exact.set(route.pattern, route);
      else if (route.kind === "template") this.templates.push(route);
      else this.wildcards.push(route);
    }
    // The longest (most specific) wildcard wins.
    this.wildcards.sort((a, b) => (b.prefix?.length ?? 0) - (a.prefix?.length ?? 0));
  }

  serviceTypes(): string[] {
    return [...this.byType.keys()];
  }

  servicesOfType(type: string): readonly ServiceConfig[] {
    return this.byType.get(type) ?? [];
  }

  /** Services with a client-facing model alias, in config order. */
  models(): ServiceConfig[] {
    return this.services.filter((s) => s.model !== "");
  }

  findModel(model: string): ServiceConfig | undefined {
    return this.services.find((s) => s.model === model);
  }

  /** Exact paths beat `{model}` templates, which beat wildcards. */
  matchPath(path: string): PathMatch | undefined {
    const exact = this.exact.get(path);
    if (exact) return { pattern: exact.pattern, services: exact.services, byModel: exact.byModel };
    for (const route of this.templates) {
      const match = route.regex?.exec(path);
      if (match) return { pattern: route.pattern, services: route.services, byModel: route.byModel, modelFromPath: safeDecode(match[1]) };
    }
    for (const route of this.wildcards) {
      const prefix = route.prefix ?? "";
      if (path === prefix || path.startsWith(`${prefix}/`)) return { pattern: route.pattern, services: route.services, byModel: route.byModel };
    }
    return undefined;
  }

  /**
   * Sync model resolution (docs/design.md#model-resolution): the `{model}` path segment, else the
   * body's `model`, else the only service on the path, else the `default: true` one, else an error
   * listing them. Only the services the caller sees are candidates for the automatic choice
   * (docs/design.md#model-visibility: to this caller the others do not exist); a model named
   * outright is found even when hidden, so the visibility stage answers (and counts) it.
   */
  resolveSync(match: PathMatch, requestedModel: string | undefined, request: SyncRequestLine, caller: CallerModels = EVERY_MODEL): Resolution<ServiceConfig> {
    const wanted = match.modelFromPath ?? requestedModel;
    if (wanted !== undefined && wanted !== "") {
      const service = match.byModel ? match.byModel.get(wanted) : match.services.find((s) => s.model === wanted);
      if (service) return ok(service);
      return fail(this.unknownSyncModel(match, wanted, request, caller));
    }
    const candidates = match.services.filter(caller.sees);
    if (candidates.length === 0) return fail(errors.noRoute(request.method, request.path));
    return this.pickDefault(candidates, request.path, caller);
  }

  /**
   * Async model and operation resolution (docs/design.md#model-resolution and the `operation`
   * field); `caller` as for `resolveSync`.
   */
  resolveJob(type: string, requestedModel: string | undefined, operation: string | undefined, caller: CallerModels = EVERY_MODEL): Resolution<JobTarget> {
    const services = this.servicesOfType(type);
    let service: ServiceConfig;
    if (requestedModel !== undefined && requestedModel !== "") {
      const found = services.find((s) => s.model === requestedModel);
      if (!found) return fail(this.unknownJobModel(type, requestedModel, caller));
      service = found;
    } else {
      const candidates = services.filter(caller.sees);
      if (candidates.length === 0) return fail(this.unknownType(type, caller));
      const picked = this.pickDefault(candidates, `service type "${type}"`, caller);
      if (!picked.ok) return picked;
      service = picked.value;
    }
    const names = Object.keys(service.operations);
    if (operation !== undefined && operation !== "") {
      const paths = Object.hasOwn(service.operations, operation) ? service.operations[operation] : undefined;
      if (!paths) {
        return fail(errors.badRequest(`unknown operation "${operation}" for model "${service.model}"; available operations: ${names.join(", ") || "(none)"}`));
      }
      return ok({ service, operation, path: paths[0] });
    }
    if (names.length > 1) {
      return fail(errors.badRequest(`model "${service.model}" has several operations; choose one with the "operation" field: ${names.join(", ")}`));
    }
    if (names.length === 1) return ok({ service, operation: names[0], path: service.operations[names[0]][0] });
    return ok({ service, operation: "", path: "" });
  }

  /**
   * The 404 (`model_not_found`) for a model that does not exist on a sync path, or that this
   * caller may not see (the visibility and key steps answer with it too, so all read the
   * same, byte for byte). It lists the path's models the caller may use, possibly none.
   */
  unknownSyncModel(match: PathMatch, model: string, request: SyncRequestLine, caller: CallerModels = EVERY_MODEL): GatewayError {
    const usable = match.services.filter(caller.mayUse);
    return errors.modelNotFound(`model "${model}" is not available on ${request.path}; available models: ${modelNames(usable)}`);
  }

  /**
   * As `unknownSyncModel`, for a job's type. A type of which the caller sees no model is an
   * unknown type to it (a submission is refused so before its upload is read).
   */
  unknownJobModel(type: string, model: string, caller: CallerModels = EVERY_MODEL): GatewayError {
    const services = this.servicesOfType(type);
    if (!services.some(caller.sees)) return this.unknownType(type, caller);
    return errors.modelNotFound(
      `model "${model}" is not available for service type "${type}"; available models: ${modelNames(services.filter(caller.mayUse))}`,
    );
  }

  /** The 404 for a job type that does not exist, or of which the caller sees no model; lists only types with a model the caller may use. */
  unknownType(type: string, caller: CallerModels = EVERY_MODEL): GatewayError {
    const types = this.serviceTypes().filter((t) => this.servicesOfType(t).some(caller.mayUse));
    return errors.notFound(`unknown service type "${type}"; configured types: ${types.join(", ") || "(none)"}`);
  }

  /**
   * docs/design.md#model-resolution over the caller's candidates (never empty); the error lists
   * those it may use.
   */
  private pickDefault(candidates: readonly ServiceConfig[], where: string, caller: CallerModels): Resolution<ServiceConfig> {
    if (candidates.length === 1) return ok(candidates[0]);
    const fallback = candidates.find((s) => s.default);
    if (fallback) return ok(fallback);
    return fail(
      errors.modelRequired(`several models serve ${where} and none is the default; set "model" to one of: ${modelNames(candidates.filter(caller.mayUse))}`),
    );
  }
}
