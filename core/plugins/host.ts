/**
 * Builds a runtime from a config: the registry, the pipeline, a fresh Hono app and every
 * active plugin's state. Hot reload builds a complete new runtime and swaps one reference
 * (see core/gateway.ts), so a runtime is immutable once started.
 */
import { Hono, type Context, type MiddlewareHandler, type Next } from "hono";
import type { Clock, IdSource } from "../clock.ts";
import type { GatewayConfig } from "../config/schema.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import { RequestState, type RequestMode } from "../pipeline/context.ts";
import { headerIdentity } from "../pipeline/identity.ts";
import { Pipeline } from "../pipeline/pipeline.ts";
import { existingSlotOf, slotOf, type RequestSlot } from "../pipeline/request-slot.ts";
import { Registry } from "../registry/registry.ts";
import type { KvStore } from "../stores/kv.ts";
import type { ObjectStore } from "../stores/objects.ts";
import type { BackgroundTask, EventName, GatewayEvents, GatewayServices, PinnedFetch, PluginApi, PluginDefinition, ProcessRole } from "./types.ts";

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

/**
 * A plugin refusing the start or the reload. `problems`, when given, are config problems each
 * already named by its path (`services[5].provider: ...`) and are reported as they are; the
 * message alone is reported under `plugins:`.
 */
export class PluginError extends Error {
  override name = "PluginError";
  constructor(
    message: string,
    readonly problems?: readonly string[],
  ) {
    super(message);
  }
}

/** Plugins in dependency order; throws naming the plugin and the missing or cyclic dependency. */
export function orderPlugins(definitions: readonly PluginDefinition[], active: ReadonlySet<string>): PluginDefinition[] {
  const byName = new Map<string, PluginDefinition>();
  for (const definition of definitions) {
    if (byName.has(definition.name)) throw new PluginError(`plugin "${definition.name}" is registered twice`);
    byName.set(definition.name, definition);
  }
  const ordered: PluginDefinition[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (definition: PluginDefinition, chain: string[]) => {
    if (state.get(definition.name) === "done") return;
    if (state.get(definition.name) === "visiting") {
      throw new PluginError(`plugin dependency cycle: ${[...chain, definition.name].join(" -> ")}`);
    }
    state.set(definition.name, "visiting");
    for (const dependency of definition.dependsOn ?? []) {
      const target = byName.get(dependency);
      if (!target) throw new PluginError(`plugin "${definition.name}" depends on "${dependency}", which is not installed`);
      if (!active.has(dependency)) {
        throw new PluginError(`plugin "${definition.name}" depends on "${dependency}", which is disabled; enable it or turn "${definition.name}" off`);
      }
      visit(target, [...chain, definition.name]);
    }
    state.set(definition.name, "done");
    ordered.push(definition);
  };
  for (const definition of definitions) if (active.has(definition.name)) visit(definition, []);
  return ordered;
}

/** Which plugins run: those for this role, on by their own rule, and not turned off in `plugins:`. */
export function activePluginNames(definitions: readonly PluginDefinition[], config: GatewayConfig, role: ProcessRole): Set<string> {
  const switches = config.plugins as Record<string, unknown>;
  const active = new Set<string>();
  for (const definition of definitions) {
    if (!(definition.roles ?? ["gateway"]).includes(role)) continue;
    if (switches[definition.name] === false) continue;
    if (definition.enabled && !definition.enabled(config, role)) continue;
    active.add(definition.name);
  }
  return active;
}

function sectionValue(config: GatewayConfig, extra: Readonly<Record<string, unknown>>, key: string): unknown {
  return key in extra ? extra[key] : (config as unknown as Record<string, unknown>)[key];
}

export class Runtime {
  readonly app = new Hono();
  readonly registry: Registry;
  readonly pipeline: Pipeline;
  readonly activePlugins: string[] = [];
  private readonly services = new Map<string, unknown>();
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

  constructor(
    readonly config: GatewayConfig,
    private readonly extra: Readonly<Record<string, unknown>>,
    readonly deps: RuntimeDeps,
  ) {
    this.registry = new Registry(config.services);
    this.pipeline = new Pipeline(deps.log);
    this.pipeline.add("identify", headerIdentity(config));
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

  /** Sets up every active plugin in dependency order. */
  async install(definitions: readonly PluginDefinition[]): Promise<void> {
    const active = activePluginNames(definitions, this.config, this.deps.role);
    for (const definition of orderPlugins(definitions, active)) {
      await definition.setup(this.apiFor(definition));
      this.activePlugins.push(definition.name);
    }
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
  async handle(request: Request, from: Pick<RequestSlot, "responded" | "refusal" | "timesSent"> = {}): Promise<Response> {
    const slot = slotOf(request);
    slot.responded = from.responded;
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
    const allowed = new Set(definition.dependsOn ?? []);
    return {
      name: definition.name,
      role: deps.role,
      config: this.config,
      // A built-in plugin's section is in `config` (typed), a loaded plugin's in `extra`.
      section: definition.section ? sectionValue(this.config, this.extra, definition.section.key) : undefined,
      registry: this.registry,
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
      },
      contextOf: (request) => this.contextOf(request),
      readAsset: (path) => {
        if (!deps.readAsset) return Promise.reject(new Error(`cannot read "${path}": this runtime provides no asset reader`));
        return deps.readAsset(path);
      },
      pipeline: this.pipeline,
      newContext(request: Request, mode: RequestMode, serviceType: string) {
        const slot = slotOf(request);
        const ctx = new RequestState(request, mode, serviceType, deps.clock.now(), slot.responded);
        slot.context = ctx;
        return ctx;
      },
      stage: (stage, step) => this.pipeline.add(stage, step),
      task: (task) => {
        if (this.tasks.some((t) => t.name === task.name)) throw new PluginError(`background task "${task.name}" is registered twice`);
        this.tasks.push(task);
      },
      provide: (key, value) => {
        if (this.services.has(key)) throw new PluginError(`service "${String(key)}" is already provided; plugin "${definition.name}" cannot provide it again`);
        this.services.set(key, value);
      },
      use: <K extends keyof GatewayServices>(key: K): GatewayServices[K] => {
        if (!this.services.has(key)) {
          throw new PluginError(`plugin "${definition.name}" uses service "${String(key)}", which no active plugin provides (is its plugin in dependsOn: [${[...allowed].join(", ")}]?)`);
        }
        return this.services.get(key) as GatewayServices[K];
      },
      has: (key) => this.services.has(key),
      on: (event, listener) => {
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
