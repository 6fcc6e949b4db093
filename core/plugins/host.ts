/**
 * Builds a runtime from a config: the registry, the pipeline, a fresh Hono app and every
 * active plugin's state. Hot reload builds a complete new runtime and swaps one reference
 * (see core/gateway.ts), so a runtime is immutable once started.
 */
import { type Context, Hono, type MiddlewareHandler, type Next } from "hono";
import type { Clock, IdSource } from "../clock.ts";
import type { GatewayConfig } from "../config/schema.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import type { CallerAuth } from "../pipeline/caller-auth.ts";
import { type RequestMode, RequestState } from "../pipeline/context.ts";
import { headerIdentity } from "../pipeline/identity.ts";
import { Pipeline } from "../pipeline/pipeline.ts";
import { existingSlotOf, type RequestSlot, slotOf } from "../pipeline/request-slot.ts";
import { ModelAccess } from "../registry/model-access.ts";
import { Registry } from "../registry/registry.ts";
import type { KvStore } from "../stores/kv.ts";
import type { ObjectStore } from "../stores/objects.ts";
import { PluginError, startError } from "../errors.ts";
import { closestKey } from "../config/suggest.ts";
import {
  type BackgroundTask,
  CORE_EVENTS,
  DEFAULT_PLUGIN_LAYER,
  type EventName,
  type GatewayEvents,
  type GatewayServices,
  type PinnedFetch,
  PLUGIN_API_VERSION,
  PLUGIN_LAYERS,
  type PluginApi,
  type PluginContributions,
  type PluginDefinition,
  type PluginLayer,
  type ProcessRole,
  type WorkScope,
} from "./types.ts";

export interface RuntimeDeps {
  role: ProcessRole;
  kv: KvStore;
  objects: ObjectStore;
  clock: Clock;
  ids: IdSource;
  log: Logger;
  metrics: Metrics;
  /** The HTTP client for backends; webhooks use `fetchPinned` (adapters may pass a faster one). */
  fetch: typeof fetch;
  /** Resolves a host name to its IP addresses (webhook SSRF checks at delivery time). */
  lookupHost: (hostname: string) => Promise<string[]>;
  /** Connects to vetted addresses only (webhook deliveries); absent in some embeddings and tests. */
  fetchPinned?: PinnedFetch;
  /** Reads a file of an installed package ("swagger-ui-dist/swagger-ui.css"); absent in some embeddings and tests. */
  readAsset?: (path: string) => Promise<Uint8Array>;
  /** Carries a dispatched request's origin through its work (`PluginApi.originOfWork`); absent in some embeddings and tests. */
  workScope?: WorkScope;
}

/** Runs plugin middleware in registration order, then the rest of the app. */
async function runMiddleware(list: readonly MiddlewareHandler[], c: Context, next: Next): Promise<void> {
  if (list.length === 0) return await next();
  const step = async (index: number): Promise<void> => {
    const handler = list[index];
    if (!handler) return await next();
    const answered = await handler(c, () => step(index + 1));
    if (answered instanceof Response && !c.finalized) c.res = answered;
  };
  await step(0);
}

// PluginError lives with the other coded errors (core/errors.ts); re-exported for the plugins that import it from here.
export { PluginError };

/** Refuses a plugin whose declared `apiVersion` is not this host's. */
function checkApiVersion(definition: PluginDefinition): void {
  const wanted = definition.apiVersion;
  if (wanted === undefined || wanted === PLUGIN_API_VERSION) return;
  throw startError("GW_PLUGIN_API_VERSION", { plugin: definition.name, wanted, provided: PLUGIN_API_VERSION });
}

/** Refuses a layer name the host does not know, and the numeric `priority` that layers replaced. */
function checkLayer(definition: PluginDefinition): void {
  const declared: unknown = definition.layer;
  if (declared !== undefined && !(PLUGIN_LAYERS as readonly unknown[]).includes(declared)) {
    const near = typeof declared === "string" ? closestKey(declared, PLUGIN_LAYERS) : undefined;
    throw startError("GW_PLUGIN_LAYER_UNKNOWN", {
      of: "layer",
      plugin: definition.name,
      declared,
      near,
      layers: PLUGIN_LAYERS,
      defaultLayer: DEFAULT_PLUGIN_LAYER,
    });
  }
  if ("priority" in definition) {
    throw startError("GW_PLUGIN_LAYER_UNKNOWN", { of: "priority", plugin: definition.name, layers: PLUGIN_LAYERS });
  }
}

/** The layer a plugin is placed by. */
export function layerOf(definition: PluginDefinition): PluginLayer {
  return definition.layer ?? DEFAULT_PLUGIN_LAYER;
}

/** One active plugin in setup order: its layer, and the plugins its declarations set up before it. */
export interface PluginPlacement {
  definition: PluginDefinition;
  layer: PluginLayer;
  /** The active plugins it waits for (`dependsOn`, `optionalDependsOn`, its `after`, their `before`), by name. */
  after: string[];
}

/**
 * The active plugins in setup order, which is also the order of their routes, middleware,
 * stage steps and listeners. A stable topological sort of the declarations (`dependsOn`,
 * `optionalDependsOn` as PluginDefinition says, `before`, `after`); among the plugins free to
 * go next, the one of the earliest layer (`PLUGIN_LAYERS`), then the first by name, so the order
 * of `definitions` never matters. Throws a coded PluginError naming the plugin and the missing,
 * unknown or cyclic declaration, or the unknown layer.
 *
 * `complete`: `definitions` are every plugin of this gateway (as the Gateway installs them), so a
 * `before` / `after` naming none of them is a typo (GW_PLUGIN_ORDER_UNKNOWN). A runtime built
 * from a few plugins (an embedding, a test) skips such a name, as it skips a plugin turned off.
 */
export function placePlugins(definitions: readonly PluginDefinition[], active: ReadonlySet<string>, options: { complete?: boolean } = {}): PluginPlacement[] {
  const byName = new Map<string, PluginDefinition>();
  for (const definition of definitions) {
    if (byName.has(definition.name)) throw startError("GW_PLUGIN_DUPLICATE", { of: "plugin", name: definition.name });
    byName.set(definition.name, definition);
    checkApiVersion(definition);
    checkLayer(definition);
  }
  const chosen = definitions.filter((definition) => active.has(definition.name));
  // For each plugin, the plugins that must be set up before it.
  const firsts = new Map<string, Set<string>>(chosen.map((definition) => [definition.name, new Set<string>()]));
  const mustPrecede = (first: string, then: string) => {
    if (firsts.has(first) && first !== then) firsts.get(then)?.add(first);
  };
  for (const definition of chosen) {
    const name = definition.name;
    for (const dependency of definition.dependsOn ?? []) {
      if (!byName.has(dependency)) throw startError("GW_PLUGIN_DEPENDENCY_MISSING", { of: "not_installed", plugin: name, dependency });
      if (!active.has(dependency)) throw startError("GW_PLUGIN_DEPENDENCY_MISSING", { of: "disabled", plugin: name, dependency });
      mustPrecede(dependency, name);
    }
    for (const [field, names] of [["before", definition.before], ["after", definition.after]] as const) {
      for (const other of names ?? []) {
        if (!byName.has(other) && options.complete) throw startError("GW_PLUGIN_ORDER_UNKNOWN", { plugin: name, field, other });
        if (field === "before") mustPrecede(name, other);
        else mustPrecede(other, name);
      }
    }
    for (const optional of definition.optionalDependsOn ?? []) {
      const mutual = byName.get(optional)?.optionalDependsOn?.includes(name) ?? false;
      if (!mutual && !definition.before?.includes(optional)) mustPrecede(optional, name);
    }
  }
  const placed: PluginPlacement[] = [];
  const done = new Set<string>();
  const depth = (definition: PluginDefinition) => PLUGIN_LAYERS.indexOf(layerOf(definition));
  const rank = (a: PluginDefinition, b: PluginDefinition) => depth(a) - depth(b) || byFirstName(a.name, b.name);
  let remaining = chosen;
  while (remaining.length > 0) {
    const free = remaining.filter((definition) => [...firsts.get(definition.name)!].every((first) => done.has(first)));
    if (free.length === 0) throw orderCycle(remaining, firsts, done);
    const next = free.sort(rank)[0]!;
    placed.push({ definition: next, layer: layerOf(next), after: [...firsts.get(next.name)!].sort(byFirstName) });
    done.add(next.name);
    remaining = remaining.filter((definition) => definition !== next);
  }
  return placed;
}

/** `placePlugins` without the placements' details: the active plugins in setup order. */
export function orderPlugins(definitions: readonly PluginDefinition[], active: ReadonlySet<string>, options: { complete?: boolean } = {}): PluginDefinition[] {
  return placePlugins(definitions, active, options).map((placement) => placement.definition);
}

const byFirstName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Names one loop among the plugins no order can place: each needs the next one set up first. */
function orderCycle(remaining: readonly PluginDefinition[], firsts: ReadonlyMap<string, ReadonlySet<string>>, placed: ReadonlySet<string>): PluginError {
  const path = [remaining.map((definition) => definition.name).sort(byFirstName)[0]!];
  // Every unplaced plugin waits for at least one unplaced plugin, so this walk comes back to one it saw.
  while (path.indexOf(path[path.length - 1]!) === path.length - 1) {
    const waitingFor = [...firsts.get(path[path.length - 1]!)!].filter((name) => !placed.has(name)).sort(byFirstName);
    path.push(waitingFor[0]!);
  }
  const loop = path.slice(path.indexOf(path[path.length - 1]!));
  return startError("GW_PLUGIN_ORDER_CYCLE", { loop });
}

/** The plugins a process of `role` runs, and whether requests run through its routes and pipeline (`PluginApi.runsRequests`). */
export interface ProcessPlugins {
  active: Set<string>;
  runsRequests: boolean;
}

/**
 * Which plugins run: those for this role, on by their own rule, and not turned off in `plugins:`.
 * In a process of another role than the gateway, an active plugin that dispatches requests
 * (`PluginDefinition.dispatches`: a relay's batch lines) needs the gateway's request path, so
 * the gateway's plugins run there too (on by the same rules); no listener serves their routes.
 */
export function processPlugins(definitions: readonly PluginDefinition[], config: GatewayConfig, role: ProcessRole): ProcessPlugins {
  const switches = config.plugins as Record<string, unknown>;
  const on = (definition: PluginDefinition) => switches[definition.name] !== false && (!definition.enabled || definition.enabled(config, role));
  const runsIn = (definition: PluginDefinition, processRole: ProcessRole) => (definition.roles ?? ["gateway"]).includes(processRole);
  const own = definitions.filter((definition) => runsIn(definition, role) && on(definition));
  const runsRequests = role === "gateway" || own.some((definition) => definition.dispatches?.(config) ?? false);
  const borrowed = role !== "gateway" && runsRequests
    ? definitions.filter((definition) => !own.includes(definition) && runsIn(definition, "gateway") && on(definition))
    : [];
  return { active: new Set([...own, ...borrowed].map((definition) => definition.name)), runsRequests };
}

/** `processPlugins`' names only. */
export function activePluginNames(definitions: readonly PluginDefinition[], config: GatewayConfig, role: ProcessRole): Set<string> {
  return processPlugins(definitions, config, role).active;
}

function sectionValue(config: GatewayConfig, extra: Readonly<Record<string, unknown>>, key: string): unknown {
  return key in extra ? extra[key] : (config as unknown as Record<string, unknown>)[key];
}

export class Runtime {
  readonly app = new Hono();
  readonly registry: Registry;
  readonly modelAccess: ModelAccess;
  readonly pipeline: Pipeline;
  readonly activePlugins: string[] = [];
  /** Each active plugin in setup order, with its layer and what it waited for (for `check --verbose`). */
  readonly placements: PluginPlacement[] = [];
  /** The plugin of each middleware, outermost first (for the start log and `check --verbose`). */
  readonly middlewareOrder: string[] = [];
  /** Each service with the plugin that provided it (`use` / `has` check that plugin was declared). */
  private readonly services = new Map<string, { value: unknown; plugin: string }>();
  /** What the installed plugins declare for others to present (`PluginApi.contributions`). */
  private contributions: readonly PluginContributions[] = [];
  /** The events `on` accepts: the core's and those every installed plugin declares. */
  private knownEvents: ReadonlySet<string> = new Set(CORE_EVENTS);
  private readonly listeners = new Map<string, Array<(payload: never) => void>>();
  private readonly tasks: BackgroundTask[] = [];
  private readonly closers: Array<() => void | Promise<void>> = [];
  private readonly retirers: Array<() => void | Promise<void>> = [];
  private closing?: Promise<void>;
  private readonly readyChecks: Array<() => void | Promise<void>> = [];
  private readonly middlewares: MiddlewareHandler[] = [];
  private readonly taskControl = new AbortController();
  private readonly taskTimers = new Set<ReturnType<typeof setTimeout>>();
  private outbound: typeof fetch;
  private readonly fetchWrappers: Array<(next: typeof fetch) => typeof fetch> = [];
  private inflight = 0;
  private drained?: () => void;
  /** Whether requests run through this runtime's routes and pipeline (`PluginApi.runsRequests`); set by `install`. */
  private runsRequests = true;
  /** The auth plugin's service once the plugins are set up: the core's identify step asks it how callers are named. */
  private callerAuth?: CallerAuth;

  constructor(
    readonly config: GatewayConfig,
    private readonly extra: Readonly<Record<string, unknown>>,
    readonly deps: RuntimeDeps,
  ) {
    this.registry = new Registry(config.services);
    this.modelAccess = new ModelAccess(this.registry);
    this.pipeline = new Pipeline(deps.log);
    this.pipeline.add("identify", headerIdentity(config, () => this.callerAuth));
    this.outbound = deps.fetch;
    // Registered before any route (the core's included) so plugin middleware sees every request.
    this.app.use("*", (c, next) => runMiddleware(this.middlewares, c, next));
  }

  /** Every plugin's outbound HTTP goes through here, so a wrapper (tracing) sees all of it. */
  private readonly fetchOutbound: typeof fetch = (input, init) => this.outbound(input, init);

  /** A pinned request goes through the same wrappers as `fetchOutbound` (each call has its own innermost fetch). */
  private readonly fetchPinned: PinnedFetch = (url, addresses, init) => {
    const pinned = this.deps.fetchPinned;
    if (!pinned) return Promise.reject(new Error("this runtime cannot connect to a pinned address (no fetchPinned was provided)"));
    const innermost: typeof fetch = (input, options) => pinned(new URL(input instanceof Request ? input.url : String(input)), addresses, options);
    return this.fetchWrappers.reduce((next, wrap) => wrap(next), innermost)(url, init);
  };

  /** The whole config this runtime runs: the core's and built-in sections, and those of loaded plugins. */
  runningConfig(): Readonly<Record<string, unknown>> {
    return { ...(this.config as unknown as Record<string, unknown>), ...this.extra };
  }

  /** Sets up every active plugin in declared order (see `placePlugins`, also for `complete`). */
  async install(definitions: readonly PluginDefinition[], options: { complete?: boolean } = {}): Promise<void> {
    // Installed, not only active: a listener for the events of a plugin turned off is fine.
    this.knownEvents = new Set([...CORE_EVENTS, ...definitions.flatMap((definition) => definition.events ?? [])]);
    // Installed, not only active, like config sections: a panel or schema does not come and go with its plugin's switch.
    this.contributions = [...definitions]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map(({ name, openapi, consolePanels }) => ({ name, openapi, consolePanels }));
    const { active, runsRequests } = processPlugins(definitions, this.config, this.deps.role);
    this.runsRequests = runsRequests;
    for (const placement of placePlugins(definitions, active, options)) {
      await placement.definition.setup(this.apiFor(placement.definition));
      this.activePlugins.push(placement.definition.name);
      this.placements.push(placement);
    }
    this.callerAuth = this.services.get("auth")?.value as CallerAuth | undefined;
    for (const check of this.readyChecks) await check();
  }

  refusalOf(request: Request): string | undefined {
    return existingSlotOf(request)?.refusal;
  }

  /** The request context of a request a mode is handling, if any (for metrics and logs). */
  contextOf(request: Request): RequestState | undefined {
    return existingSlotOf(request)?.context;
  }

  /**
   * `refusal`: answer 400 with this message before any route (still counted, traced and
   * audited). `responded` and `timesSent`: what the server adapter knows (see RequestSlot).
   */
  async handle(request: Request, from: Pick<RequestSlot, "responded" | "refusal" | "timesSent" | "clientGone" | "ownBodies"> = {}): Promise<Response> {
    const slot = slotOf(request);
    slot.responded = from.responded;
    slot.clientGone = from.clientGone;
    slot.ownBodies = from.ownBodies;
    slot.refusal = from.refusal;
    slot.timesSent = from.timesSent;
    this.inflight++;
    try {
      return await this.app.fetch(request);
    } finally {
      this.inflight--;
      if (this.inflight === 0) this.drained?.();
    }
  }

  /** Resolves when no request is being handled (responses may still be streaming). */
  idle(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = resolve;
    });
  }

  startTasks(): void {
    for (const task of this.tasks) {
      const loop = async (first: boolean) => {
        if (this.taskControl.signal.aborted) return;
        if (!first || task.runAtStart) await this.runTask(task);
        if (this.taskControl.signal.aborted) return;
        const timer = setTimeout(() => {
          this.taskTimers.delete(timer);
          void loop(false);
        }, task.everyMs);
        this.taskTimers.add(timer);
      };
      void loop(true);
    }
  }

  /** Runs a background task now (tests drive tasks this way instead of waiting for timers). */
  async runTaskNow(name: string): Promise<void> {
    const task = this.tasks.find((t) => t.name === name);
    if (!task) throw new Error(`no background task "${name}"; tasks: ${this.tasks.map((t) => t.name).join(", ")}`);
    await this.runTask(task);
  }

  /**
   * A hot reload replaced this runtime: its background tasks stop at once (the new runtime
   * runs its own), plugins stop taking new work (`onRetire`), and this resolves once the
   * work they had started and the requests in flight have ended. `close` follows.
   */
  async retire(): Promise<void> {
    this.stopTasks();
    await Promise.allSettled([this.idle(), ...this.retirers.map((retire) => Promise.resolve().then(retire))]);
  }

  /** Stops the runtime (once; a later call waits for the same close). */
  close(): Promise<void> {
    this.closing ??= this.closeNow();
    return this.closing;
  }

  private stopTasks(): void {
    this.taskControl.abort();
    for (const timer of this.taskTimers) clearTimeout(timer);
    this.taskTimers.clear();
  }

  private async closeNow(): Promise<void> {
    this.stopTasks();
    // Reverse order: a plugin closes before the plugins it depends on.
    for (const close of this.closers.reverse()) {
      try {
        await close();
      } catch (error) {
        this.deps.log.error("plugin_close_failed", { error });
      }
    }
  }

  emit<E extends EventName>(event: E, payload: GatewayEvents[E]): void {
    for (const listener of this.listeners.get(event) ?? []) {
      try {
        (listener as (p: GatewayEvents[E]) => void)(payload);
      } catch (error) {
        this.deps.log.error("event_listener_failed", { hook: event, error });
      }
    }
  }

  private async runTask(task: BackgroundTask): Promise<void> {
    try {
      await task.run(this.taskControl.signal);
    } catch (error) {
      this.deps.log.error("background_task_failed", { task: task.name, error });
    }
  }

  private apiFor(definition: PluginDefinition): PluginApi {
    const deps = this.deps;
    const log = deps.log.child({ plugin: definition.name });
    const declared = new Set([...(definition.dependsOn ?? []), ...(definition.optionalDependsOn ?? [])]);
    /** The service entry, if provided; refuses one whose plugin this plugin did not declare. */
    const reach = (key: string) => {
      const entry = this.services.get(key);
      if (entry && entry.plugin !== definition.name && !declared.has(entry.plugin)) {
        throw startError("GW_PLUGIN_UNDECLARED_USE", { plugin: definition.name, service: key, provider: entry.plugin });
      }
      return entry;
    };
    return {
      name: definition.name,
      role: deps.role,
      runsRequests: this.runsRequests,
      config: this.config,
      // A built-in plugin's section is in `config` (typed), a loaded plugin's in `extra`.
      section: definition.section ? sectionValue(this.config, this.extra, definition.section.key) : undefined,
      registry: this.registry,
      modelAccess: this.modelAccess,
      kv: deps.kv,
      objects: deps.objects,
      clock: deps.clock,
      ids: deps.ids,
      log,
      metrics: deps.metrics,
      fetch: this.fetchOutbound,
      wrapFetch: (wrapper) => {
        this.fetchWrappers.push(wrapper);
        this.outbound = wrapper(this.outbound);
      },
      lookupHost: deps.lookupHost,
      fetchPinned: this.fetchPinned,
      routes: this.app,
      middleware: (handler) => {
        this.middlewares.push(handler);
        this.middlewareOrder.push(definition.name);
      },
      contextOf: (request) => this.contextOf(request),
      readAsset: (path) => {
        if (!deps.readAsset) return Promise.reject(new Error(`cannot read "${path}": this runtime provides no asset reader`));
        return deps.readAsset(path);
      },
      contributions: this.contributions,
      pipeline: this.pipeline,
      newContext(request: Request, mode: RequestMode, serviceType: string) {
        const slot = slotOf(request);
        const ctx = new RequestState(request, mode, serviceType, deps.clock.now(), slot.responded, slot.clientGone);
        if (slot.ownBodies) ctx.ownBodies = true;
        if (slot.dispatched) {
          ctx.principal = slot.dispatched.principal;
          ctx.origin = slot.dispatched.origin;
        }
        slot.context = ctx;
        return ctx;
      },
      dispatchAs: (principal, request, origin) => {
        slotOf(request).dispatched = { principal, origin };
        const scope = deps.workScope;
        return scope ? scope.run(origin, () => this.handle(request)) : this.handle(request);
      },
      originOfWork: () => deps.workScope?.origin() ?? "client",
      stage: (stage, step) => this.pipeline.add(stage, step),
      task: (task) => {
        if (this.tasks.some((t) => t.name === task.name)) throw startError("GW_PLUGIN_DUPLICATE", { of: "task", name: task.name });
        this.tasks.push(task);
      },
      provide: (key, value) => {
        if (this.services.has(key)) throw startError("GW_PLUGIN_DUPLICATE", { of: "service", name: String(key), plugin: definition.name });
        this.services.set(key, { value, plugin: definition.name });
      },
      use: <K extends keyof GatewayServices>(key: K): GatewayServices[K] => {
        const entry = reach(key);
        if (!entry) {
          throw startError("GW_PLUGIN_DEPENDENCY_MISSING", {
            of: "service",
            plugin: definition.name,
            service: String(key),
            dependsOn: definition.dependsOn ?? [],
          });
        }
        return entry.value as GatewayServices[K];
      },
      has: (key) => reach(key) !== undefined,
      on: (event, listener) => {
        if (!this.knownEvents.has(event)) {
          throw startError("GW_HOOK_UNKNOWN", { plugin: definition.name, event, events: [...this.knownEvents] });
        }
        const list = this.listeners.get(event) ?? [];
        list.push(listener as (payload: never) => void);
        this.listeners.set(event, list);
      },
      emit: (event, payload) => this.emit(event, payload),
      onClose: (fn) => {
        this.closers.push(fn);
      },
      onRetire: (fn) => {
        this.retirers.push(fn);
      },
      onReady: (check) => {
        this.readyChecks.push(check);
      },
    };
  }
}
