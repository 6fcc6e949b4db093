/**
 * Every error a caller can see, in one place. Requests: a code, its HTTP status, the `type` of
 * the error body and a message saying what to fix; body shape for every status:
 * `{"error":{"message":"...","type":"..."}}`, plus a stable `code` where a client may match
 * on it (`model_not_found`). Start and reload refusals: a stable code
 * (`START_ERROR_CODES`) on `ConfigError` and `PluginError`, printed by the adapters.
 */

export type ErrorType =
  | "invalid_request_error"
  | "not_found_error"
  | "authentication_error"
  | "permission_error"
  | "conflict_error"
  | "gone_error"
  | "request_too_large"
  | "rate_limit_error"
  | "not_implemented_error"
  | "overloaded_error"
  | "backend_error"
  | "timeout_error"
  | "store_error"
  | "config_error"
  | "api_error";

export interface ErrorBody {
  error: { message: string; type: ErrorType; code?: ErrorCode };
}

/** The stable codes an error body may carry, for clients that branch on them (as OpenAI's `code`). */
export type ErrorCode = "model_not_found";

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly code?: ErrorCode,
  ) {
    super(message);
    this.name = "GatewayError";
  }

  toResponse(): Response {
    return errorResponse(this.status, this.type, this.message, this.headers, this.code);
  }
}

export function errorResponse(status: number, type: ErrorType, message: string, headers: Record<string, string> = {}, code?: ErrorCode): Response {
  const body: ErrorBody = { error: code === undefined ? { message, type } : { message, type, code } };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** Constructors for the errors the gateway answers with; name them by situation, not status. */
export const errors = {
  badRequest: (message: string) => new GatewayError(400, "invalid_request_error", message),
  notFound: (message: string) => new GatewayError(404, "not_found_error", message),
  /** A model that does not exist, or that this caller may not see or use: the two read the same. */
  modelNotFound: (message: string) => new GatewayError(404, "not_found_error", message, {}, "model_not_found"),
  /** A path nothing serves (to a request naming no model, a path whose every model is hidden from the caller reads the same). */
  noRoute: (method: string, path: string) => new GatewayError(404, "not_found_error", `no route for ${method} ${path}`),
  unauthorized: (message: string, challenge = "Bearer") =>
    new GatewayError(401, "authentication_error", message, { "www-authenticate": challenge }),
  forbidden: (message: string) => new GatewayError(403, "permission_error", message),
  conflict: (message: string) => new GatewayError(409, "conflict_error", message),
  tooLarge: (message: string) => new GatewayError(413, "request_too_large", message),
  unsupportedMediaType: (message: string) => new GatewayError(415, "invalid_request_error", message),
  rateLimited: (message: string, retryAfterSeconds: number, headers: Record<string, string> = {}) =>
    new GatewayError(429, "rate_limit_error", message, { "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))), ...headers }),
  notImplemented: (message: string) => new GatewayError(501, "not_implemented_error", message),
  overloaded: (message: string) => new GatewayError(503, "overloaded_error", message),
  storeUnavailable: (message: string) => new GatewayError(503, "store_error", message),
  badGateway: (message: string) => new GatewayError(502, "backend_error", message),
  gatewayTimeout: (message: string) => new GatewayError(504, "timeout_error", message),
  internal: (message: string) => new GatewayError(500, "api_error", message),
};

/** Any thrown value as a response; unknown errors become a 500 without leaking internals. */
export function toErrorResponse(error: unknown): Response {
  if (error instanceof GatewayError) return error.toResponse();
  // A user plugin loaded through a TypeScript loader may carry its own copy of this module.
  const like = error as Partial<GatewayError> | null;
  if (like && like.name === "GatewayError" && typeof like.status === "number" && typeof like.type === "string") {
    return errorResponse(like.status, like.type, String(like.message), like.headers ?? {}, like.code);
  }
  return errorResponse(500, "api_error", "internal error; see the gateway log for details");
}

/**
 * The stable codes of start (and reload) refusals and plugin errors, with when each happens
 * and what to do: docs/plugins.md "Start errors" lists the same table (a test keeps the two equal).
 * Fastify's error codes are the model: scripts and docs match on the code, not the wording.
 */
export const START_ERROR_CODES = {
  GW_CONFIG_NOT_FOUND: {
    when: "No config file: CONFIG_PATH names a missing file, or neither ./config.yaml nor ./config.example.yaml exists.",
    fix: "Point CONFIG_PATH at the config file, or run from the directory that holds config.yaml.",
  },
  GW_CONFIG_INVALID: {
    when: "The config file does not parse or does not validate; or a plugin found a problem in its settings.",
    fix: "Fix each listed problem; each names its key (`services[0].type: required`).",
  },
  GW_ENV_INVALID: {
    when: "An address in the environment (GATEWAY_ADDR, PORT, RELAY_METRICS_ADDR) is not host:port or :port.",
    fix: "Correct or unset the variable the message names.",
  },
  GW_LISTEN_FAILED: {
    when: "The listener could not open: port in use, no permission, address not on this host.",
    fix: "Choose another port or address (server.addr, GATEWAY_ADDR, PORT; relay.metrics_addr, RELAY_METRICS_ADDR).",
  },
  GW_WORKERS_NEED_REDIS: {
    when: "`server.workers` is above 1 while the key-value store is the embedded one (no `redis.addr`, `redis.sentinel` or `redis.cluster`).",
    fix: "Set `redis.addr` (or Sentinel / Cluster): limits, usage, jobs and the cache must be shared by the workers. Or set `server.workers: 1`.",
  },
  GW_WORKERS_UNSUPPORTED: {
    when: "`server.workers` is above 1 where this runtime cannot run workers: Deno outside Linux (no load-balancing `reusePort`), or Deno without `--allow-run`.",
    fix: "Run the gateway on Node, on Linux, or with `--allow-run` as the message says; or set `server.workers: 1` and run replicas.",
  },
  GW_PLUGIN_LOAD_FAILED: {
    when: "A `plugins.load` module cannot be imported, or its default export is not `definePlugin({...})`.",
    fix: "Check the path (relative to the config file) and that the module does `export default definePlugin({...})`.",
  },
  GW_PLUGIN_DUPLICATE: {
    when: "Two plugins share a name; a service, background task or LLM provider is registered twice; or two plugins declare the same OpenAPI schema or tag, or console panel id.",
    fix: "Rename one of them, or remove the second copy from `plugins.load`.",
  },
  GW_PLUGIN_API_VERSION: {
    when: "A plugin declares an `apiVersion` other than this gateway's plugin API version (`PLUGIN_API_VERSION`).",
    fix: "Use a plugin release written for this gateway's version, or a gateway that provides the plugin's.",
  },
  GW_PLUGIN_DEPENDENCY_MISSING: {
    when: "A plugin's `dependsOn` names a plugin that is not installed or is turned off; or `api.use` asks for a service no active plugin provides.",
    fix: "Install or enable the dependency, or turn the dependent plugin off (`plugins: {NAME: false}`).",
  },
  GW_PLUGIN_ORDER_UNKNOWN: {
    when: "A plugin's `before` or `after` names a plugin that is not installed.",
    fix: "Correct the name, or install the plugin it names.",
  },
  GW_PLUGIN_LAYER_UNKNOWN: {
    when: "A plugin's `layer` is not one of the layers (telemetry, audit, admin-guard, identity, routes, catch-all), or it declares the numeric `priority` that layers replaced.",
    fix: "Declare one of the layers (the message suggests the nearest), or `before` / `after` naming plugins.",
  },
  GW_PLUGIN_ORDER_CYCLE: {
    when: "`dependsOn`, `optionalDependsOn`, `before` and `after` ask for an order that loops (the message lists the loop).",
    fix: "Drop or reverse one of the declarations in the loop.",
  },
  GW_PLUGIN_UNDECLARED_USE: {
    when: "`api.use` or `api.has` reaches a service of a plugin that is in neither `dependsOn` nor `optionalDependsOn`.",
    fix: "Add the providing plugin to `dependsOn` (required) or `optionalDependsOn` (used when active).",
  },
  GW_HOOK_UNKNOWN: {
    when: "`api.on` names an event that neither the core nor any installed plugin declares.",
    fix: "Correct the event name, or declare it in `events` of the plugin that emits it.",
  },
  GW_PLUGIN_REFUSED: {
    when: "A plugin's `setup` or `onReady` check refused the start (its message says why).",
    fix: "Do what the message says; it comes from the plugin named in it.",
  },
  GW_START_FAILED: {
    when: "An unexpected error while starting (printed with its stack trace).",
    fix: "Read the trace; report it if the gateway's own code failed.",
  },
} as const satisfies Record<string, { when: string; fix: string }>;

export type StartErrorCode = keyof typeof START_ERROR_CODES;

/**
 * The config (or what a plugin found in it) refuses the start or the reload. `problems` each
 * name their key (`services[2].type: required`); `code` says which kind of refusal it is.
 */
export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(
    readonly problems: string[],
    readonly code: StartErrorCode = "GW_CONFIG_INVALID",
  ) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
  }
}

/**
 * A plugin (or the host, about a plugin) refusing the start or the reload. `problems`, when
 * given, are config problems each already named by its path (`services[5].provider: ...`)
 * and are reported as they are; the message alone is reported under `plugins:`. The code
 * defaults to GW_CONFIG_INVALID with problems, GW_PLUGIN_REFUSED without.
 */
export class PluginError extends Error {
  override name = "PluginError";
  readonly code: StartErrorCode;
  constructor(
    message: string,
    readonly problems?: readonly string[],
    code?: StartErrorCode,
  ) {
    super(message);
    this.code = code ?? (problems ? "GW_CONFIG_INVALID" : "GW_PLUGIN_REFUSED");
  }
}

/** A PluginError, also one from another copy of this module (a user plugin loaded through a TypeScript loader). */
export function isPluginError(error: unknown): error is PluginError {
  if (error instanceof PluginError) return true;
  const like = error as Partial<PluginError> | null;
  return typeof like === "object" && like !== null && like.name === "PluginError" && typeof like.message === "string";
}
