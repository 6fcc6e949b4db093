/**
 * What a plugin is and what it may do. A plugin is a module whose default export is
 * `definePlugin({...})`. It declares its name, its dependencies and (optionally) a
 * config section of its own; `setup` registers what it adds through `PluginApi` and
 * touches nothing else. Everything it starts, it stops in an `onClose` callback.
 */
import type { Hono, MiddlewareHandler } from "hono";
import type { Static, TSchema } from "@sinclair/typebox";
import type { Clock, IdSource } from "../clock.ts";
import type { ConsolePanel } from "../console/panel.ts";
import type { ConfigSection, GatewayConfig, SectionFieldSet, ServiceFieldSet } from "../config/schema.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import type { OpenApiContribution } from "../openapi/contribution.ts";
import type { Pipeline, StageStep, StepStage } from "../pipeline/pipeline.ts";
import type { Registry } from "../registry/registry.ts";
import type { ModelAccess } from "../registry/model-access.ts";
import type { KvStore } from "../stores/kv.ts";
import type { ObjectStore } from "../stores/objects.ts";
import type { Principal, RequestContext, RequestMode, RequestOrigin, RequestState } from "../pipeline/context.ts";

/**
 * Services plugins offer each other (a provider registry, the job store, ...). A plugin
 * that provides one declares it here by declaration merging:
 *
 *   declare module "../../core/plugins/types.ts" {
 *     interface GatewayServices { providers: ProviderRegistry }
 *   }
 */
// deno-lint-ignore no-empty-interface
export interface GatewayServices {}

/**
 * Named events, the closed list of hooks (extended by declaration merging, like services).
 * An unknown event name is a type error, not a silent no-op.
 */
export interface GatewayEvents {
  /** A request finished: feeds the gateway request counter and request logs. */
  "request.finished": {
    mode: RequestMode | "admin";
    serviceType: string;
    /** The resolved model alias ("" when the request never resolved one). */
    model: string;
    consumer?: string;
    userType?: string;
    status: number;
    durationMs: number;
  };
}

export type EventName = keyof GatewayEvents;

/**
 * The events of the core's contracts: `request.finished` (above), `llm.usage`
 * (core/llm/usage.ts) and the job lifecycle shared by the job plugins (async jobs, relay, GC,
 * limits, usage, webhooks). A plugin that adds events lists their names in
 * `definePlugin({ events })`: types vanish at run time, and `api.on` refuses a name nobody
 * declared (GW_HOOK_UNKNOWN) instead of registering a listener that never runs.
 */
export const CORE_EVENTS: readonly EventName[] = ["request.finished", "llm.usage", "job.submitted", "job.terminal", "job.expiry", "relay.processed"];

/**
 * The version of the contract in this file. A plugin may say which one it was written for
 * (`apiVersion`); a different one refuses the start (GW_PLUGIN_API_VERSION). Raised only
 * when a change would break existing plugins.
 */
export const PLUGIN_API_VERSION = 1;

/**
 * The named layers a plugin declares (`layer`), from the outside of a request in. Among the
 * plugins that their declarations (`dependsOn`, `optionalDependsOn`, `before`, `after`) leave
 * free to go next, the one of the earliest layer is set up first, then by name; so the
 * middleware ring reads from the names: tracing outside the audit log outside the admin guard.
 */
export const PLUGIN_LAYERS = [
  /** Tracing and telemetry export: the outermost middleware (every request traced), and first to wrap `fetch` and the log. */
  "telemetry",
  /** The audit log: its middleware inside the trace and outside everything else, so a refused admin call is audited. */
  "audit",
  /** The admin token check: its middleware inside telemetry and audit, before every route. */
  "admin-guard",
  /** Who the caller is: set up before the features that read the principal. */
  "identity",
  /** The default: the features, their routes, stage steps and services. */
  "routes",
  /** The sync proxy's catch-all route: after every other plugin's routes, so a wildcard path cannot shadow them. */
  "catch-all",
] as const;

export type PluginLayer = (typeof PLUGIN_LAYERS)[number];

/** The layer of a plugin that declares none. */
export const DEFAULT_PLUGIN_LAYER: PluginLayer = "routes";

/** The process a runtime is built for: the HTTP gateway or a standalone relay worker. */
export type ProcessRole = "gateway" | "relay";

/**
 * A value carried through the asynchronous work started inside `run`: the runtime's
 * AsyncLocalStorage, given by the adapter. It tells code that gets no request context (pricing
 * an answer) that it runs for a request the gateway dispatched itself (`dispatchAs`).
 */
export interface WorkScope {
  run<T>(origin: RequestOrigin, fn: () => T): T;
  /** The origin of the dispatched request this work runs for; undefined outside one. */
  origin(): RequestOrigin | undefined;
}

export interface BackgroundTask {
  name: string;
  /** Time between the end of one run and the start of the next. */
  everyMs: number;
  /** Run once as soon as the runtime starts. */
  runAtStart?: boolean;
  run(signal: AbortSignal): Promise<void>;
}

/**
 * An HTTP request connected to one of `addresses`, never to what the URL's
 * host name resolves to at connection time: the SSRF check's answer is the one used (webhooks).
 * Bodies are strings or bytes; redirects are not followed.
 */
export type PinnedFetch = (url: URL, addresses: readonly string[], init?: RequestInit) => Promise<Response>;

export interface PluginApi<Section = unknown> {
  readonly name: string;
  readonly role: ProcessRole;
  /**
   * Whether requests run through this runtime's routes and pipeline: always in a gateway; in a
   * relay process only when an active plugin dispatches them (`PluginDefinition.dispatches`),
   * though no listener serves its routes there. A plugin of both roles registers its pipeline
   * steps and request-time listeners (budgets, usage) when this is true, not by `role`.
   */
  readonly runsRequests: boolean;
  /**
   * The whole validated config. A plugin reads the core's sections, its own section and its
   * own `sectionFields` (`fieldsOf`); what it needs of another plugin's settings it gets from
   * that plugin's service (`use`).
   */
  readonly config: GatewayConfig;
  /** This plugin's own config section (from `definePlugin({ section })`), defaulted and validated. */
  readonly section: Section;
  readonly registry: Registry;
  /**
   * Which models each caller sees and may use: a plugin that hides models (`hide`) or
   * refuses them (`deny`) adds its rule, and modes ask `of(ctx)` and `notFound(ctx, model)`.
   */
  readonly modelAccess: ModelAccess;
  readonly kv: KvStore;
  readonly objects: ObjectStore;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** The HTTP client to call backends with; webhooks use `fetchPinned` (injectable for tests and adapters). */
  readonly fetch: typeof fetch;
  /** Wraps the outbound HTTP client for every plugin of this runtime (tracing, for example). */
  wrapFetch(wrapper: (next: typeof fetch) => typeof fetch): void;
  /** Resolves a host name to its IP addresses (provided by the runtime adapter). */
  readonly lookupHost: (hostname: string) => Promise<string[]>;
  /**
   * `fetch` that connects only to `addresses` (vetted by the caller) instead of resolving the
   * URL's host again; Host header and TLS name stay the URL's. Goes through `wrapFetch` wrappers.
   */
  readonly fetchPinned: PinnedFetch;
  /** Add routes here. The core's own routes (/health, /metrics, /-/reload) are registered first. */
  readonly routes: Hono;
  /**
   * Middleware around every request, the core's own routes included (`routes.use("*")`
   * only sees requests that no earlier route answered). For tracing and audit logs.
   */
  middleware(handler: MiddlewareHandler): void;
  /** The pipeline context of a request a mode handled (principal, mode, service), if any. */
  contextOf(request: Request): RequestContext | undefined;
  /**
   * Reads a file shipped in an installed package, e.g. "swagger-ui-dist/swagger-ui.css"
   * (provided by the runtime adapter; plugins never touch the file system themselves).
   */
  readAsset(path: string): Promise<Uint8Array>;
  /**
   * What every installed plugin declares for others to present (`openapi`, `consolePanels`),
   * whether it is on or off, by plugin name: the docs and console plugins read it.
   */
  readonly contributions: readonly PluginContributions[];
  /** Runs requests through the core stages (modes use it in their route handlers). */
  readonly pipeline: Pipeline;
  /** A request context for a mode's route handler. */
  newContext(request: Request, mode: RequestMode, serviceType: string): RequestState;
  /**
   * Runs a request the gateway sends itself on someone's behalf (a batch line, for the batch's
   * owner) through this runtime's routes and pipeline, exactly as a client's request, except
   * that it runs as `principal`: the identify stage is skipped, so nothing the request carries
   * (headers, credentials) changes who it runs as, and `ctx.origin` is `origin`. Only a Request
   * object handed to this call is marked so; one from outside never is. Resolves with the
   * answer a client would get; its body must be read or cancelled. A plugin that calls it in a
   * relay process declares `dispatches`, so that the gateway's plugins run there to answer.
   */
  dispatchAs(principal: Principal, request: Request, origin: Exclude<RequestOrigin, "client">): Promise<Response>;
  /**
   * The origin of the request the current work runs for, where no request context is at hand
   * (pricing an answer inside the LLM proxy): `dispatchAs`'s origin within the work of such a
   * request, else "client" (also in a runtime whose adapter gives no `WorkScope`).
   */
  originOfWork(): RequestOrigin;
  stage(stage: StepStage, step: StageStep): void;
  task(task: BackgroundTask): void;
  provide<K extends keyof GatewayServices>(key: K, value: GatewayServices[K]): void;
  /**
   * A service another plugin provides; that plugin must be in `dependsOn` or
   * `optionalDependsOn` (else GW_PLUGIN_UNDECLARED_USE), and active (else GW_PLUGIN_DEPENDENCY_MISSING).
   */
  use<K extends keyof GatewayServices>(key: K): GatewayServices[K];
  /** True when some active plugin provides the service (optional integrations: its plugin goes in `optionalDependsOn`). */
  has<K extends keyof GatewayServices>(key: K): boolean;
  /** Listens to a declared event (`CORE_EVENTS` or a plugin's `events`); another name is GW_HOOK_UNKNOWN. */
  on<E extends EventName>(event: E, listener: (payload: GatewayEvents[E]) => void): void;
  emit<E extends EventName>(event: E, payload: GatewayEvents[E]): void;
  onClose(fn: () => void | Promise<void>): void;
  /**
   * Runs when a hot reload replaced this runtime, before `onClose`: stop taking new work and
   * resolve once the work already started has ended (the relay lets its running jobs
   * finish). The runtime closes when every such promise has settled and its requests in
   * flight have ended; a shutdown meanwhile closes it at once.
   */
  onRetire(fn: () => void | Promise<void>): void;
  /**
   * Runs once every active plugin is set up, before the runtime serves (at start and on
   * reload): for checks that need what later plugins registered (user providers, say).
   * Throwing a PluginError refuses the start or the reload with its message as a config problem.
   */
  onReady(check: () => void | Promise<void>): void;
}

export interface PluginDefinition<S extends TSchema = TSchema> {
  name: string;
  /** The `PLUGIN_API_VERSION` this plugin was written for; another one refuses the start. */
  apiVersion?: number;
  /** Plugins that must be active (and set up) before this one; their services are usable. */
  dependsOn?: readonly string[];
  /**
   * Plugins this one integrates with when they are active (`api.has` / `api.use` of their
   * services): set up before this one when active; absent or off is fine. No order comes of it
   * when this plugin's own `before` names it, or when the two name each other (each uses the
   * other only at request time).
   */
  optionalDependsOn?: readonly string[];
  /**
   * Where this plugin goes among the others; its routes, middleware, stage steps and event
   * listeners are registered in that order (a route registered earlier wins; middleware
   * registered earlier is outer; earlier steps of a stage run first). `before` / `after`
   * name installed plugins (a plugin turned off is skipped; an unknown name refuses the start).
   */
  before?: readonly string[];
  after?: readonly string[];
  /**
   * Its place among the plugins the declarations leave free to go next: the earliest layer
   * first (default "routes"), then by name, so the order never depends on the order of the
   * plugin list (see `PLUGIN_LAYERS`). The declarations come first: a plugin waits for the
   * plugins it depends on whatever its layer. A name that is not a layer refuses the start
   * (GW_PLUGIN_LAYER_UNKNOWN).
   */
  layer?: PluginLayer;
  /** Events this plugin adds to `GatewayEvents` (by declaration merging), so `api.on` accepts them. */
  events?: readonly EventName[];
  /** The roles whose process runs this plugin (default: gateway only). */
  roles?: readonly ProcessRole[];
  /**
   * True when this plugin, active in a process of another role than the gateway (a relay),
   * sends requests through the gateway's own routes and pipeline there (`api.dispatchAs`, as
   * batch lines do): that process then also runs the gateway's plugins (each still on by its own
   * rule), with no listener serving their routes, and `api.runsRequests` is true in it.
   */
  dispatches?(config: GatewayConfig): boolean;
  /**
   * A top-level config section of this plugin's own, validated by `schema` (and `validate`) with
   * the rest of the file, whether the plugin is on or not. `api.section` is its value.
   */
  section?: ConfigSection<S>;
  /** Fields this plugin adds to every `services[i]`, validated per service with paths like `services[2].retry`. */
  serviceFields?: ServiceFieldSet;
  /**
   * Its part of the API document (`GET /openapi.yaml`): tags, component schemas and the paths of
   * its routes. The docs plugin collects it from every installed plugin.
   */
  openapi?: OpenApiContribution;
  /** Its views in the admin console (`/-/console`), in tab order. The console plugin collects them from every installed plugin. */
  consolePanels?: readonly ConsolePanel[];
  /**
   * Fields this plugin adds to sections it does not own (the core's `metrics` or `redis`, another
   * plugin's section), keeping their paths in the file: `redis.pending_max_age` is the GC's. Read
   * with `fieldsOf(api.config, set)`; a plugin reads no other plugin's section or fields.
   */
  sectionFields?: readonly SectionFieldSet[];
  /**
   * On when the config says so (default: always on). `plugins: { NAME: false }` turns any plugin off.
   * `role` lets a plugin of several roles decide per process (the relay: always in relay
   * processes, in the gateway only when embedded).
   */
  enabled?(config: GatewayConfig, role: ProcessRole): boolean;
  setup(api: PluginApi<Static<S>>): void | Promise<void>;
}

/** What a plugin declares for other plugins to present, as `PluginApi.contributions` lists it. */
export type PluginContributions = Pick<PluginDefinition, "name" | "openapi" | "consolePanels">;

/** Identity helper that keeps the section type attached to `setup`. */
export function definePlugin<S extends TSchema = TSchema>(definition: PluginDefinition<S>): PluginDefinition<S> {
  return definition;
}
