/**
 * Every error a caller can see, in one place. Requests: a stable code (`ERROR_CODES`), its HTTP
 * status, the `type` of the error body and a message saying what to fix; body shape for every
 * status: `{"error":{"message":"...","type":"...","code":"..."}}`. Start and reload refusals: a
 * stable code with its message (`START_ERROR_CODES`) on `ConfigError` and `PluginError`,
 * printed by the adapters.
 */
import { listenAddressProblem } from "./config/addr.ts";

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
  | "api_error"
  | "guardrail_blocked";

/**
 * The stable codes an error body carries, for clients that branch on them (as OpenAI's `code`),
 * each with the one status and type it is answered with. docs/errors.md lists the same table,
 * with when each happens (a test keeps the two equal). A code is never renamed or reused:
 * messages may change, codes do not.
 */
export const ERROR_CODES = {
  invalid_request: { status: 400, type: "invalid_request_error" },
  model_required: { status: 400, type: "invalid_request_error" },
  // A guardrail's refusal: its body's `code` is the rule's name (docs/guardrails.md), this code names the row.
  guardrail_blocked: { status: 400, type: "guardrail_blocked" },
  unauthorized: { status: 401, type: "authentication_error" },
  forbidden: { status: 403, type: "permission_error" },
  not_found: { status: 404, type: "not_found_error" },
  no_route: { status: 404, type: "not_found_error" },
  model_not_found: { status: 404, type: "not_found_error" },
  job_not_found: { status: 404, type: "not_found_error" },
  request_timeout: { status: 408, type: "timeout_error" },
  conflict: { status: 409, type: "conflict_error" },
  idempotency_conflict: { status: 409, type: "conflict_error" },
  payload_too_large: { status: 413, type: "request_too_large" },
  unsupported_media_type: { status: 415, type: "invalid_request_error" },
  expectation_failed: { status: 417, type: "invalid_request_error" },
  content_filter: { status: 400, type: "invalid_request_error" },
  rate_limited: { status: 429, type: "rate_limit_error" },
  rate_limit_exceeded: { status: 429, type: "rate_limit_error" },
  budget_exceeded: { status: 429, type: "rate_limit_error" },
  concurrent_jobs_exceeded: { status: 429, type: "rate_limit_error" },
  retry_after_refusal: { status: 429, type: "rate_limit_error" },
  headers_too_large: { status: 431, type: "request_too_large" },
  client_closed: { status: 499, type: "api_error" },
  internal_error: { status: 500, type: "api_error" },
  config_invalid: { status: 500, type: "config_error" },
  reload_failed: { status: 500, type: "api_error" },
  provider_not_registered: { status: 500, type: "config_error" },
  not_implemented: { status: 501, type: "not_implemented_error" },
  backend_error: { status: 502, type: "backend_error" },
  overloaded: { status: 503, type: "overloaded_error" },
  concurrency_cap: { status: 503, type: "overloaded_error" },
  store_unavailable: { status: 503, type: "store_error" },
  auth_unavailable: { status: 503, type: "api_error" },
  backend_timeout: { status: 504, type: "timeout_error" },
  // An `error` event that ends a streamed answer: its 200 was sent before the failure.
  stream_interrupted: { status: 200, type: "backend_error" },
} as const satisfies Record<string, { status: number; type: ErrorType; reserved?: true }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  error: { message: string; type: ErrorType; code: ErrorCode };
}

/** The code an error built without one carries (a plugin's own `new GatewayError`): the generic one of its status. */
export function defaultErrorCode(status: number): ErrorCode {
  switch (status) {
    case 400:
      return "invalid_request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 408:
      return "request_timeout";
    case 409:
      return "conflict";
    case 413:
      return "payload_too_large";
    case 415:
      return "unsupported_media_type";
    case 429:
      return "rate_limited";
    case 499:
      return "client_closed";
    case 501:
      return "not_implemented";
    case 502:
      return "backend_error";
    case 503:
      return "overloaded";
    case 504:
      return "backend_timeout";
    default:
      return status < 500 ? "invalid_request" : "internal_error";
  }
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly headers: Record<string, string> = {},
    code?: ErrorCode,
  ) {
    super(message);
    this.name = "GatewayError";
    this.code = code ?? defaultErrorCode(status);
  }

  toResponse(): Response {
    return errorResponse(this.status, this.type, this.message, this.headers, this.code);
  }
}

/** The gateway's error body; without a code, the generic one of the status (`defaultErrorCode`). */
export function errorBody(status: number, type: ErrorType, message: string, code: ErrorCode = defaultErrorCode(status)): ErrorBody {
  return { error: { message, type, code } };
}

export function errorResponse(status: number, type: ErrorType, message: string, headers: Record<string, string> = {}, code?: ErrorCode): Response {
  return new Response(JSON.stringify(errorBody(status, type, message, code)), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** The error of a code, with the status and type the code is answered with. */
function coded(code: ErrorCode, message: string, headers: Record<string, string> = {}): GatewayError {
  const { status, type } = ERROR_CODES[code];
  return new GatewayError(status, type, message, headers, code);
}

/** A 429 of a code, with Retry-After in whole seconds (at least 1). */
const tooMany = (code: ErrorCode) => (message: string, retryAfterSeconds: number, headers: Record<string, string> = {}): GatewayError =>
  coded(code, message, { "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))), ...headers });

/**
 * Constructors for the errors the gateway answers with; name them by situation, not status.
 * Each sets its code: the generic one of its status, or the situation's own where a client
 * may branch on it (`modelNotFound`, `budgetExceeded`...).
 */
export const errors = {
  badRequest: (message: string) => coded("invalid_request", message),
  /** Several models serve the path, none is the default, and the request names none. */
  modelRequired: (message: string) => coded("model_required", message),
  notFound: (message: string) => coded("not_found", message),
  /** A model that does not exist, or that this caller may not see or use: the two read the same. */
  modelNotFound: (message: string) => coded("model_not_found", message),
  /** A job that does not exist, expired from the store, or belongs to another consumer: the three read the same. */
  jobNotFound: (message: string) => coded("job_not_found", message),
  /** A path nothing serves (to a request naming no model, a path whose every model is hidden from the caller reads the same). */
  noRoute: (method: string, path: string) => coded("no_route", `no route for ${method} ${path}`),
  unauthorized: (message: string, challenge = "Bearer") => coded("unauthorized", message, { "www-authenticate": challenge }),
  forbidden: (message: string) => coded("forbidden", message),
  conflict: (message: string) => coded("conflict", message),
  /** An Idempotency-Key used before for a job this request cannot be answered with. */
  idempotencyConflict: (message: string) => coded("idempotency_conflict", message),
  tooLarge: (message: string) => coded("payload_too_large", message),
  /** A JSON body sent as another type than application/json where only JSON is read (admin routes). */
  unsupportedMediaType: (message: string) => coded("unsupported_media_type", message),
  /** A 429 without a more specific code below (a plugin's own limit). */
  rateLimited: tooMany("rate_limited"),
  /** A request-rate window is full (requests per period). */
  rateLimitExceeded: tooMany("rate_limit_exceeded"),
  /** A token, dollar or processing-time budget is used up, or held by requests in flight. */
  budgetExceeded: tooMany("budget_exceeded"),
  /** A consumer's concurrent jobs (pending or processing) are at their limit. */
  concurrentJobsExceeded: tooMany("concurrent_jobs_exceeded"),
  /** Every backend of the model is sitting out a Retry-After it sent. */
  retryAfterRefusal: tooMany("retry_after_refusal"),
  notImplemented: (message: string) => coded("not_implemented", message),
  overloaded: (message: string) => coded("overloaded", message),
  /** A model's sync concurrency cap (`max_concurrent_sync`) is reached. */
  concurrencyCap: (message: string) => coded("concurrency_cap", message),
  storeUnavailable: (message: string) => coded("store_unavailable", message),
  /** Identity cannot be checked right now (the OAuth2 key set cannot be fetched). */
  authUnavailable: (message: string) => coded("auth_unavailable", message),
  badGateway: (message: string) => coded("backend_error", message),
  gatewayTimeout: (message: string) => coded("backend_timeout", message),
  /** A model names a provider no active plugin registered. */
  providerNotRegistered: (message: string) => coded("provider_not_registered", message),
  internal: (message: string) => coded("internal_error", message),
};

/** Any thrown value as a response; unknown errors become a 500 without leaking internals. */
export function toErrorResponse(error: unknown): Response {
  if (error instanceof GatewayError) return error.toResponse();
  // A user plugin loaded through a TypeScript loader may carry its own copy of this module.
  const like = error as Partial<GatewayError> | null;
  if (like && like.name === "GatewayError" && typeof like.status === "number" && typeof like.type === "string") {
    return errorResponse(like.status, like.type, String(like.message), like.headers ?? {}, like.code);
  }
  return errorResponse(500, "api_error", "internal error; see the gateway log for details", {}, "internal_error");
}

/**
 * The stable codes of start (and reload) refusals and plugin errors, with when each happens,
 * what to do, and the message each is raised with (a template taking the parts that vary): a
 * throw site reads `throw startError("GW_PLUGIN_DUPLICATE", { of: "plugin", name })`.
 * docs/plugins.md "Start errors" lists the same table (a test keeps the two equal). Fastify's
 * error codes are the model: scripts and docs match on the code, not the wording.
 */
export const START_ERROR_CODES = {
  GW_CONFIG_NOT_FOUND: {
    when: "No config file: CONFIG_PATH names a missing file, or neither ./config.yaml nor ./config.example.yaml exists.",
    fix: "Point CONFIG_PATH at the config file, or run from the directory that holds config.yaml.",
    /** `from`: what chose the path (`--config`, `CONFIG_PATH`, or the default files). */
    message: ({ path, from }: { path: string; from: string }) => {
      if (from === "--config") return `--config names ${path}, which does not exist; give the path of your config file (relative to the working directory)`;
      if (from === "CONFIG_PATH") {
        return `CONFIG_PATH names ${path}, which does not exist; point CONFIG_PATH at your config file, or unset it to use ./config.yaml`;
      }
      return "no config file: neither ./config.yaml nor ./config.example.yaml exists in the working directory; run from the gateway's directory, create ./config.yaml or set CONFIG_PATH";
    },
  },
  GW_CONFIG_INVALID: {
    when: "The config file does not parse or does not validate; or a plugin found a problem in its settings.",
    fix: "Fix each listed problem; each names its key (`services[0].type: required`).",
    /**
     * Each problem is worded where it is found (the validator or the plugin names its key); every
     * ConfigError, whatever its code, lists its problems under this heading.
     */
    message: ({ problems }: { problems: readonly string[] }) => `invalid configuration:\n  ${problems.join("\n  ")}`,
  },
  GW_ENV_INVALID: {
    when: "An address in the environment (GATEWAY_ADDR, PORT, RELAY_METRICS_ADDR) is not host:port or :port.",
    fix: "Correct or unset the variable the message names.",
    // Worded as the same problem in server.addr is.
    message: ({ variable, value }: { variable: string; value: string }) => listenAddressProblem(`${variable} (environment)`, value),
  },
  GW_LISTEN_FAILED: {
    when: "The listener could not open: port in use, no permission, address not on this host.",
    fix: "Choose another port or address (server.addr, GATEWAY_ADDR, PORT; relay.metrics_addr, RELAY_METRICS_ADDR).",
    /** `cause`: the failure when the runtime named a known one, else `detail` (its message) says it; `settings`: where the address is set. */
    message: (
      { hostname, port, cause, detail, settings }: {
        hostname?: string;
        port: number;
        cause?: "in_use" | "no_permission" | "not_local";
        detail: string;
        settings: string;
      },
    ) => {
      const why = cause === "in_use"
        ? `the port ${port} is already in use by another process; stop that process or choose another port`
        : cause === "no_permission"
        ? `no permission to listen on port ${port} (ports below 1024 need privileges); choose a port from 1024`
        : cause === "not_local"
        ? `${hostname} is not an address of this machine; use one of its addresses, or ":${port}" for all`
        : detail;
      return `cannot listen on ${hostname ?? ""}:${port}: ${why} (${settings})`;
    },
  },
  GW_WORKERS_NEED_REDIS: {
    when: "`server.workers` is above 1 while the key-value store is the embedded one (no `redis.addr`, `redis.sentinel` or `redis.cluster`).",
    fix: "Set `redis.addr` (or Sentinel / Cluster): limits, usage, jobs and the cache must be shared by the workers. Or set `server.workers: 1`.",
    /** `workers`: the setting as given, with what `auto` came to. */
    message: ({ workers }: { workers: string }) =>
      `cannot start: server.workers is ${workers}, but the key-value store is the embedded one (redis.addr is empty), ` +
      "which lives inside one process: each worker would keep limits, usage, jobs and cached answers of its own. " +
      "Set redis.addr (or redis.sentinel / redis.cluster) so the workers share them, or set server.workers: 1",
  },
  GW_WORKERS_UNSUPPORTED: {
    when:
      "`server.workers` is above 1 where this runtime cannot run workers: Deno outside Linux (no load-balancing `reusePort`), or Deno without `--allow-run`.",
    fix: "Run the gateway on Node, on Linux, or with `--allow-run` as the message says; or set `server.workers: 1` and run replicas.",
    /** `why`: what this runtime lacks, from the adapter. */
    message: ({ workers, why }: { workers: string; why: string }) => `cannot start: server.workers is ${workers}, but ${why}`,
  },
  GW_PLUGIN_LOAD_FAILED: {
    when: "A `plugins.load` module cannot be imported, or its default export is not `definePlugin({...})`.",
    fix: "Check the path (relative to the config file) and that the module does `export default definePlugin({...})`.",
    /** `importError`: why the import failed; absent, the module imported but exports no plugin. */
    message: ({ index, path, importError }: { index: number; path: string; importError?: string }) =>
      importError === undefined
        ? `plugins.load[${index}]: "${path}" must export default definePlugin({ name, setup })`
        : `plugins.load[${index}]: cannot import "${path}": ${importError}`,
  },
  GW_PLUGIN_DUPLICATE: {
    when:
      "Two plugins share a name; a service, background task, LLM provider or client protocol is registered twice; two client protocols claim the same path; or two plugins declare the same OpenAPI schema or tag, or console panel id.",
    fix: "Rename one of them, or remove the second copy from `plugins.load`.",
    message: (what: { of: "plugin" | "provider" | "task"; name: string } | { of: "service"; name: string; plugin: string }) => {
      if (what.of === "service") return `service "${what.name}" is already provided; plugin "${what.plugin}" cannot provide it again`;
      if (what.of === "provider") return `LLM provider "${what.name}" is registered twice; give the second one another name`;
      return what.of === "task" ? `background task "${what.name}" is registered twice` : `plugin "${what.name}" is registered twice`;
    },
  },
  GW_PLUGIN_API_VERSION: {
    when: "A plugin declares an `apiVersion` other than this gateway's plugin API version (`PLUGIN_API_VERSION`).",
    fix: "Use a plugin release written for this gateway's version, or a gateway that provides the plugin's.",
    message: ({ plugin, wanted, provided }: { plugin: string; wanted: number; provided: number }) =>
      `plugin "${plugin}" was written for plugin API version ${wanted}, but this gateway provides version ${provided}; use a release of "${plugin}" written for version ${provided}, or a gateway that provides version ${wanted}`,
  },
  GW_PLUGIN_DEPENDENCY_MISSING: {
    when: "A plugin's `dependsOn` names a plugin that is not installed or is turned off; or `api.use` asks for a service no active plugin provides.",
    fix: "Install or enable the dependency, or turn the dependent plugin off (`plugins: {NAME: false}`).",
    message: (
      what:
        | { of: "not_installed" | "disabled"; plugin: string; dependency: string }
        | { of: "service"; plugin: string; service: string; dependsOn: readonly string[] },
    ) => {
      if (what.of === "service") {
        return `plugin "${what.plugin}" uses service "${what.service}", which no active plugin provides (is its plugin in dependsOn: [${
          what.dependsOn.join(", ")
        }]?)`;
      }
      return what.of === "disabled"
        ? `plugin "${what.plugin}" depends on "${what.dependency}", which is disabled; enable it or turn "${what.plugin}" off`
        : `plugin "${what.plugin}" depends on "${what.dependency}", which is not installed`;
    },
  },
  GW_PLUGIN_ORDER_UNKNOWN: {
    when: "A plugin's `before` or `after` names a plugin that is not installed.",
    fix: "Correct the name, or install the plugin it names.",
    message: ({ plugin, field, other }: { plugin: string; field: "before" | "after"; other: string }) =>
      `plugin "${plugin}" declares ${field}: ["${other}"], but no plugin "${other}" is installed; correct the name or install it`,
  },
  GW_PLUGIN_LAYER_UNKNOWN: {
    when:
      "A plugin's `layer` is not one of the layers (telemetry, audit, admin-guard, identity, routes, catch-all), or it declares the numeric `priority` that layers replaced.",
    fix: "Declare one of the layers (the message suggests the nearest), or `before` / `after` naming plugins.",
    /** `layers`: every layer, outermost first; `near`: the layer closest to what was declared, if any. */
    message: (
      what:
        | { of: "layer"; plugin: string; declared: unknown; near?: string; layers: readonly string[]; defaultLayer: string }
        | { of: "priority"; plugin: string; layers: readonly string[] },
    ) =>
      what.of === "layer"
        ? `plugin "${what.plugin}" declares layer: ${JSON.stringify(what.declared)}, which is not a layer${
          what.near ? `; did you mean "${what.near}"?` : ""
        } (the layers, outermost first: ${what.layers.join(", ")}; default ${what.defaultLayer})`
        : `plugin "${what.plugin}" declares priority, which this gateway no longer reads; declare its layer instead (${
          what.layers.join(", ")
        }), or before / after naming plugins`,
  },
  GW_PLUGIN_ORDER_CYCLE: {
    when: "`dependsOn`, `optionalDependsOn`, `before` and `after` ask for an order that loops (the message lists the loop).",
    fix: "Drop or reverse one of the declarations in the loop.",
    /** `loop`: the plugins, each to be set up after the next, the first repeated at the end. */
    message: ({ loop }: { loop: readonly string[] }) =>
      `plugin order cycle: ${
        loop.join(" -> ")
      } (each must be set up after the next, by dependsOn, optionalDependsOn, before or after); drop or reverse one of these declarations`,
  },
  GW_PLUGIN_UNDECLARED_USE: {
    when: "`api.use` or `api.has` reaches a service of a plugin that is in neither `dependsOn` nor `optionalDependsOn`.",
    fix: "Add the providing plugin to `dependsOn` (required) or `optionalDependsOn` (used when active).",
    message: ({ plugin, service, provider }: { plugin: string; service: string; provider: string }) =>
      `plugin "${plugin}" uses service "${service}" of plugin "${provider}" without declaring it; add "${provider}" to its dependsOn (required) or optionalDependsOn (used when active)`,
  },
  GW_HOOK_UNKNOWN: {
    when: "`api.on` names an event that neither the core nor any installed plugin declares.",
    fix: "Correct the event name, or declare it in `events` of the plugin that emits it.",
    message: ({ plugin, event, events }: { plugin: string; event: string; events: readonly string[] }) =>
      `plugin "${plugin}" listens to "${event}", which no plugin declares; events: ${
        events.join(", ")
      } (a plugin that emits a new event lists it in definePlugin({ events }))`,
  },
  GW_PLUGIN_REFUSED: {
    when: "A plugin's `setup` or `onReady` check refused the start (its message says why).",
    fix: "Do what the message says; it comes from the plugin named in it.",
    /** The plugin's own words (`throw new PluginError("...")`). */
    message: ({ reason }: { reason: string }) => reason,
  },
  GW_START_FAILED: {
    when: "An unexpected error while starting (printed with its stack trace).",
    fix: "Read the trace; report it if the gateway's own code failed.",
    message: ({ error }: { error: unknown }) => (error as Error | undefined)?.stack ?? String(error),
  },
} as const satisfies Record<string, { when: string; fix: string; message: (params: never) => string }>;

export type StartErrorCode = keyof typeof START_ERROR_CODES;

/** The parts a start error's message names (`{ name }`, `{ plugin, dependency }`...). */
export type StartErrorParams<C extends StartErrorCode> = Parameters<(typeof START_ERROR_CODES)[C]["message"]>[0];

/** The message of a start error, from its code's template. */
export function startErrorMessage<C extends StartErrorCode>(code: C, params: StartErrorParams<C>): string {
  const template = START_ERROR_CODES[code].message as (params: StartErrorParams<C>) => string;
  return template(params);
}

/** A coded PluginError whose message is its code's (`throw startError("GW_PLUGIN_DUPLICATE", { of: "plugin", name })`). */
export function startError<C extends StartErrorCode>(code: C, params: StartErrorParams<C>): PluginError {
  return new PluginError(startErrorMessage(code, params), undefined, code);
}

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
    super(startErrorMessage("GW_CONFIG_INVALID", { problems }));
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
