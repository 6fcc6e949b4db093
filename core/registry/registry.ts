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
}

export interface PathMatch {
  /** The configured pattern that matched (e.g. `/v1/chat/completions` or `/v2/models/{model}/infer`). */
  pattern: string;
  services: readonly ServiceConfig[];
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

function compile(pattern: string): Omit<Route, "services"> {
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

/** Which services an error message may name to this caller (hidden models are never named). */
export type ListedFilter = (service: ServiceConfig) => boolean;

function modelNames(services: readonly ServiceConfig[], listed?: ListedFilter): string {
  return services.filter((s) => !listed || listed(s)).map((s) => s.model).filter((m) => m !== "").join(", ") || "(none configured)";
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
          const route = routes.get(pattern) ?? { ...compile(pattern), services: [] };
          if (!route.services.includes(service)) route.services.push(service);
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
    if (exact) return { pattern: exact.pattern, services: exact.services };
    for (const route of this.templates) {
      const match = route.regex?.exec(path);
      if (match) return { pattern: route.pattern, services: route.services, modelFromPath: safeDecode(match[1]) };
    }
    for (const route of this.wildcards) {
      const prefix = route.prefix ?? "";
      if (path === prefix || path.startsWith(`${prefix}/`)) return { pattern: route.pattern, services: route.services };
    }
    return undefined;
  }

  /**
   * Sync model resolution (spec 4.5): the `{model}` path segment, else the body's `model`,
   * else the only service on the path, else the `default: true` one, else an error listing them.
   */
  resolveSync(match: PathMatch, requestedModel: string | undefined, path: string, listed?: ListedFilter): Resolution<ServiceConfig> {
    const wanted = match.modelFromPath ?? requestedModel;
    if (wanted !== undefined && wanted !== "") {
      const service = match.services.find((s) => s.model === wanted);
      if (service) return ok(service);
      return fail(errors.notFound(`model "${wanted}" is not available on ${path}; available models: ${modelNames(match.services, listed)}`));
    }
    return this.pickDefault(match.services, `${path}`, listed);
  }

  /** Async model and operation resolution (spec 4.1 rule 3 and the `operation` field). */
  resolveJob(type: string, requestedModel: string | undefined, operation: string | undefined, listed?: ListedFilter): Resolution<JobTarget> {
    const services = this.servicesOfType(type);
    if (services.length === 0) {
      return fail(errors.notFound(`unknown service type "${type}"; configured types: ${this.serviceTypes().join(", ") || "(none)"}`));
    }
    let service: ServiceConfig;
    if (requestedModel !== undefined && requestedModel !== "") {
      const found = services.find((s) => s.model === requestedModel);
      if (!found) {
        return fail(errors.notFound(`model "${requestedModel}" is not available for service type "${type}"; available models: ${modelNames(services, listed)}`));
      }
      service = found;
    } else {
      const picked = this.pickDefault(services, `service type "${type}"`, listed);
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

  private pickDefault(services: readonly ServiceConfig[], where: string, listed?: ListedFilter): Resolution<ServiceConfig> {
    if (services.length === 1) return ok(services[0]);
    const fallback = services.find((s) => s.default);
    if (fallback) return ok(fallback);
    return fail(errors.badRequest(`several models serve ${where} and none is the default; set "model" to one of: ${modelNames(services, listed)}`));
  }
}
