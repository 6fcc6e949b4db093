/**
 * The gateway: a current runtime behind one reference, swapped by hot reload.
 * Adapters create it with what only they can provide (the config file, the environment,
 * module loading, the stores) and serve `gateway.fetch`.
 */
import { type Clock, type IdSource, randomIds, systemClock } from "./clock.ts";
import { parseConfigFile, validateConfigWith } from "./config/load.ts";
import type { Env } from "./config/env.ts";
import { CoreConfigSchema, type GatewayConfig } from "./config/schema.ts";
import { ConfigError, errors, GatewayError, isPluginError, startErrorMessage, toErrorResponse } from "./errors.ts";
import { createLogger, type Logger } from "./log.ts";
import { Metrics } from "./metrics.ts";
import { registerOpsRoutes, type ReloadOutcome } from "./ops.ts";
import { configPartsOf } from "./plugins/config-parts.ts";
import { Runtime, type RuntimeDeps } from "./plugins/host.ts";
import type { PinnedFetch, PluginDefinition, ProcessRole, WorkScope } from "./plugins/types.ts";
import { instrumentKv, instrumentObjects } from "./stores/instrument.ts";
import type { KvStore } from "./stores/kv.ts";
import type { ObjectStore } from "./stores/objects.ts";
import type { ClientGone } from "./proxy/client-gone.ts";

export interface Stores {
  kv: KvStore;
  objects: ObjectStore;
}

export interface GatewayOptions {
  role?: ProcessRole;
  /** Reads the config file; called at start and on every reload. */
  readConfig(): Promise<string>;
  env: Env;
  /** Imports a user plugin module named in `plugins.load`. */
  importModule(specifier: string): Promise<unknown>;
  /** Opens the stores the first config names; they live as long as the gateway (reload keeps them). */
  openStores(config: GatewayConfig, log: Logger): Promise<Stores>;
  plugins: readonly PluginDefinition[];
  clock?: Clock;
  ids?: IdSource;
  log?: Logger;
  metrics?: Metrics;
  fetch?: typeof fetch;
  /** Host name -> IP addresses; adapters pass the runtime's resolver. */
  lookupHost?: (hostname: string) => Promise<string[]>;
  /** Connects to vetted addresses only (webhook deliveries); adapters pass the runtime's. */
  fetchPinned?: PinnedFetch;
  /** Reads a file of an installed package (API docs assets); adapters pass one. */
  readAsset?: (path: string) => Promise<Uint8Array>;
  /** The runtime's AsyncLocalStorage, carrying a dispatched request's origin (adapters pass one). */
  workScope?: WorkScope;
  /**
   * Leave the background tasks and the `gateway_started` line to `start()`, which the server
   * adapter calls once it listens: a gateway that cannot listen then takes no job and does not
   * claim to have started.
   */
  deferStart?: boolean;
}

interface LoadedConfig {
  config: GatewayConfig;
  extra: Readonly<Record<string, unknown>>;
  definitions: PluginDefinition[];
}

function isPluginDefinition(value: unknown): value is PluginDefinition {
  const candidate = value as Partial<PluginDefinition> | null;
  return typeof candidate === "object" && candidate !== null && typeof candidate.name === "string" && typeof candidate.setup === "function";
}

export class Gateway {
  private current!: Runtime;
  private reloading: Promise<unknown> = Promise.resolve();
  /** A reload built but neither committed nor discarded yet (`stageReload`). */
  private staged: StagedReload | undefined;
  private closing = false;
  /** Runtimes a reload replaced that are still finishing their work (see `retire`). */
  private readonly retiring = new Set<Runtime>();

  /**
   * @param started the config the process started with, loaded plugins' sections included: what
   *   is in force for the settings a reload cannot change (stores, listener), whatever files
   *   were reloaded since.
   */
  private constructor(
    private readonly options: GatewayOptions,
    private readonly deps: RuntimeDeps,
    private readonly started: RunningConfig,
  ) {}

  /** Loads and validates the config, opens the stores, builds and starts the first runtime (with `deferStart`, `start()` does). Throws `ConfigError` listing every problem. */
  static async create(options: GatewayOptions): Promise<Gateway> {
    const log = options.log ?? createLogger();
    const loaded = await loadConfig(options);
    const stores = await options.openStores(loaded.config, log);
    const metrics = options.metrics ?? new Metrics();
    const deps: RuntimeDeps = {
      role: options.role ?? "gateway",
      kv: instrumentKv(stores.kv, metrics, log),
      objects: instrumentObjects(stores.objects, metrics, log),
      clock: options.clock ?? systemClock,
      ids: options.ids ?? randomIds,
      log,
      metrics,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      lookupHost: options.lookupHost ?? (async () => {
        throw new Error("host name resolution is not available in this runtime");
      }),
      fetchPinned: options.fetchPinned,
      readAsset: options.readAsset,
      workScope: options.workScope,
    };
    const gateway = new Gateway(options, deps, { ...loaded.config, ...loaded.extra });
    gateway.current = await gateway.build(loaded);
    metrics.processMetrics(loaded.config.metrics.default_metrics);
    gateway.storeKinds = { kv: stores.kv.kind, objects: stores.objects.kind };
    if (!options.deferStart) gateway.start();
    return gateway;
  }

  private storeKinds = { kv: "", objects: "" };
  private startedTasks = false;

  /** Starts the background tasks (relay, GC, webhook retries) and logs `gateway_started`; once. */
  start(): void {
    if (this.startedTasks) return;
    this.startedTasks = true;
    this.current.startTasks();
    this.deps.log.info("gateway_started", {
      role: this.deps.role,
      plugins: this.current.activePlugins,
      middleware: this.current.middlewareOrder,
      services: this.current.config.services.length,
      ...this.storeKinds,
    });
  }

  get runtime(): Runtime {
    return this.current;
  }

  get config(): GatewayConfig {
    return this.current.config;
  }

  /**
   * Answers one request. `responded`, when the server adapter can provide it, settles once
   * the response has been written or the client went away: work that must wait for the end
   * of the response (releasing a slot, filling the cache) then hangs on it instead of the
   * response body being wrapped in another stream to find its end. `timesSent` counts a
   * header's repeats in the raw request (identity headers sent twice are refused).
   * `clientGone` tells the client going away when the adapter can without the request's
   * `signal` (core/proxy/client-gone.ts); without it the request's `signal` is read.
   * `ownBodies`: the adapter writes a stream's chunks itself when the Response hands them over
   * (core/proxy/own-body-response.ts), so the gateway's streams need no web stream.
   */
  readonly fetch = (
    request: Request,
    options?: { responded?: PromiseLike<unknown>; target?: string; timesSent?: (name: string) => number; clientGone?: ClientGone; ownBodies?: boolean },
  ): Promise<Response> => {
    return this.current.handle(request, {
      responded: options?.responded,
      clientGone: options?.clientGone,
      refusal: unnormalizedPath(options?.target ?? request.url),
      timesSent: options?.timesSent,
      ownBodies: options?.ownBodies,
    });
  };

  /**
   * Builds a complete new runtime from the file and swaps it in. In-flight requests (and
   * running relay jobs) finish on the old runtime, which is closed once they are done. On
   * any problem the old runtime stays.
   */
  reload(): Promise<ReloadOutcome> {
    return this.stageReload().then((staged) => staged.commit());
  }

  /**
   * A reload in two steps, for gateways that must change together (the workers of one
   * listener): the new runtime is built from the file and checked, but not swapped in until
   * `commit()`; `discard()` drops it and keeps the running one. Other reloads wait until one of
   * the two is called. A refused file gives a refusal `outcome`; both calls then return it.
   */
  stageReload(): Promise<StagedReload> {
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const staged = this.reloading.then(() => this.prepareReload()).then((prepared): StagedReload => {
      if (!prepared.ok) {
        settle();
        return { outcome: prepared, commit: () => prepared, discard: async () => undefined };
      }
      let done = false;
      const handle: StagedReload = {
        outcome: prepared.outcome,
        commit: () => {
          if (!done) this.apply(prepared);
          done = true;
          this.staged = undefined;
          settle();
          return prepared.outcome;
        },
        discard: async () => {
          if (done) return;
          done = true;
          this.staged = undefined;
          await prepared.runtime.close();
          settle();
        },
      };
      this.staged = handle;
      // Built while the gateway was closing: nobody will commit it.
      if (this.closing) void handle.discard();
      return handle;
    });
    this.reloading = staged.then(() => settled, () => undefined);
    return staged;
  }

  /**
   * What `POST /-/reload` runs: this gateway's `reload`, unless the adapter coordinates the
   * reloads of several processes (`reloadWith`).
   */
  private reloadEverywhere: () => Promise<ReloadOutcome> = () => this.reload();

  /** Has `POST /-/reload` run `reloadAll` instead: the adapter of a worker reloads every worker together. */
  reloadWith(reloadAll: () => Promise<ReloadOutcome>): void {
    this.reloadEverywhere = reloadAll;
  }

  async close(): Promise<void> {
    // A reload staged and never decided (its coordinator went away) is dropped.
    this.closing = true;
    await this.staged?.discard();
    await this.reloading;
    // A runtime still retiring is closed now too: shutdown does not wait for its work.
    await Promise.all([this.current, ...this.retiring].map((runtime) => runtime.close()));
    await Promise.allSettled([this.deps.kv.close(), this.deps.objects.close()]);
  }

  private async prepareReload(): Promise<PreparedReload | Extract<ReloadOutcome, { ok: false }>> {
    let runtime: Runtime;
    let definitions: readonly PluginDefinition[];
    try {
      const loaded = await loadConfig(this.options);
      definitions = loaded.definitions;
      runtime = await this.build(loaded);
    } catch (error) {
      const invalid = error instanceof ConfigError;
      const problems = invalid ? error.problems : [(error as Error).message];
      this.deps.log.warn("reload_refused", { code: invalid ? error.code : "GW_START_FAILED", problems });
      return { ok: false, cause: invalid ? "config" : "failure", problems };
    }
    return { ok: true, runtime, definitions, outcome: { ok: true, services: runtime.config.services.length } };
  }

  private apply({ runtime, definitions }: PreparedReload): void {
    const previous = this.current;
    // Against the start, not the previous file: a reload never applied these keys, so a file
    // that puts back the started values needs no restart.
    const ignored = restartOnlyChanges(this.started, runtime.runningConfig(), definitions);
    if (ignored.length > 0) {
      this.deps.log.warn("reload_needs_restart", {
        keys: ignored,
        message: "these settings differ from the ones running (read at start) and apply only after a restart",
      });
    }
    this.current = runtime;
    this.deps.metrics.processMetrics(runtime.config.metrics.default_metrics);
    if (this.startedTasks) runtime.startTasks(); // else start() will
    this.deps.log.info("reloaded", { plugins: runtime.activePlugins, middleware: runtime.middlewareOrder, services: runtime.config.services.length });
    this.retire(previous);
  }

  /**
   * The replaced runtime finishes what it started (requests in flight, running relay jobs),
   * then closes and releases what it holds.
   */
  private retire(runtime: Runtime): void {
    this.retiring.add(runtime);
    void runtime
      .retire()
      .then(() => runtime.close())
      .finally(() => this.retiring.delete(runtime));
  }

  private async build(loaded: LoadedConfig): Promise<Runtime> {
    const runtime = new Runtime(loaded.config, loaded.extra, this.deps);
    registerOpsRoutes(runtime, { reload: () => this.reloadEverywhere() });
    try {
      // The built-in plugins and plugins.load: every plugin this gateway has.
      await runtime.install(loaded.definitions, { complete: true });
    } catch (error) {
      await runtime.close();
      if (isPluginError(error)) throw new ConfigError(error.problems ? [...error.problems] : [`plugins: ${error.message}`], error.code);
      throw error;
    }
    // A route that throws answers with the error body, never a plain-text 500.
    runtime.app.onError((error) => {
      if (!(error instanceof GatewayError)) this.deps.log.error("route_failed", { error });
      return toErrorResponse(error);
    });
    runtime.app.notFound((c) => errors.noRoute(c.req.method, new URL(c.req.url).pathname).toResponse());
    return runtime;
  }
}

/** A reload built and checked, not yet in force (`Gateway.stageReload`). */
export interface StagedReload {
  outcome: ReloadOutcome;
  /** Swaps the new runtime in (the replaced one finishes its work); returns `outcome`. */
  commit(): ReloadOutcome;
  /** Drops the new runtime; the running one stays. */
  discard(): Promise<void>;
}

interface PreparedReload {
  ok: true;
  runtime: Runtime;
  definitions: readonly PluginDefinition[];
  outcome: ReloadOutcome;
}

/** The whole config a runtime runs: the core's and built-in sections, and those of loaded plugins. */
type RunningConfig = Readonly<Record<string, unknown>>;

/**
 * Settings a hot reload cannot apply: stores and listeners are opened once. The core's are
 * listed here; a plugin names its own (`restartOnly` of its section, built-in or loaded, e.g. a
 * standalone relay's `relay.metrics_addr`, and of its section fields, e.g. `metrics.top_consumers`).
 * A section that was not there at start (its plugin came with a later file) has no started value
 * to differ from.
 */
function restartOnlyChanges(running: RunningConfig, next: RunningConfig, plugins: readonly PluginDefinition[]): string[] {
  const before = running as unknown as GatewayConfig;
  const after = next as unknown as GatewayConfig;
  // The core's own Redis settings: fields plugins add to the section (`redis.pending_max_age`) say for themselves.
  const redisKeys = Object.keys(CoreConfigSchema.properties.redis.properties) as Array<keyof GatewayConfig["redis"]>;
  const watched: Record<string, (c: GatewayConfig) => unknown> = {
    redis: (c) => redisKeys.map((key) => c.redis[key]),
    object_store: (c) => c.object_store,
    "server.addr": (c) => c.server.addr,
    "server.read_timeout": (c) => c.server.read_timeout,
    "server.write_timeout": (c) => c.server.write_timeout,
    "server.idle_timeout": (c) => c.server.idle_timeout,
    "server.workers": (c) => c.server.workers,
  };
  const valueAt = (section: string, key: string) => (c: GatewayConfig) =>
    ((c as unknown as Record<string, Record<string, unknown> | undefined>)[section] ?? {})[key];
  // Listeners first (the standalone relay's), then the plugins' counters, as the log always listed them.
  for (const { section } of plugins) {
    if (!section || !(section.key in running)) continue;
    for (const key of section.restartOnly ?? []) watched[`${section.key}.${key}`] = valueAt(section.key, key);
  }
  for (const { sectionFields } of plugins) {
    for (const fields of sectionFields ?? []) {
      for (const key of fields.restartOnly ?? []) watched[`${fields.section}.${key}`] = valueAt(fields.section, key);
    }
  }
  return Object.entries(watched)
    .filter(([, pick]) => JSON.stringify(pick(before)) !== JSON.stringify(pick(after)))
    .map(([key]) => key);
}

/** The one validation path of a start and a reload: whatever one refuses, the other refuses too. */
async function loadConfig(options: GatewayOptions): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await options.readConfig();
  } catch (error) {
    throw new ConfigError([`(file): cannot read the config file: ${(error as Error).message}`]);
  }
  const raw = parseConfigFile(text, options.env);
  const pluginsSection = raw.plugins as { load?: unknown } | undefined;
  const paths = Array.isArray(pluginsSection?.load) ? pluginsSection.load : [];
  const problems: string[] = [];
  const userPlugins: PluginDefinition[] = [];
  for (const [index, path] of paths.entries()) {
    try {
      const module = (await options.importModule(String(path))) as { default?: unknown };
      if (!isPluginDefinition(module.default)) {
        problems.push(startErrorMessage("GW_PLUGIN_LOAD_FAILED", { index, path: String(path) }));
      } else {
        userPlugins.push(module.default);
      }
    } catch (error) {
      problems.push(startErrorMessage("GW_PLUGIN_LOAD_FAILED", { index, path: String(path), importError: (error as Error).message }));
    }
  }
  const definitions = [...options.plugins, ...userPlugins];
  let result: ReturnType<typeof validateConfigWith>;
  try {
    result = validateConfigWith(raw, configPartsOf(options.plugins, userPlugins));
  } catch (error) {
    // Two plugins declaring the same section key or service field.
    if (!(error instanceof ConfigError)) throw error;
    result = { ok: false, problems: error.problems };
  }
  if (!result.ok) problems.push(...result.problems);
  // The code names the first kind of problem: an import that failed comes before the file's own.
  if (problems.length > 0 || !result.ok) throw new ConfigError(problems, userPlugins.length < paths.length ? "GW_PLUGIN_LOAD_FAILED" : "GW_CONFIG_INVALID");
  return { config: result.config, extra: result.extra, definitions };
}

/** A `.` or `..` path segment, literal or percent-encoded (`%2e`). */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?=\/|$)/i;
/** A percent-encoded unreserved character (ALPHA, DIGIT, "-", ".", "_", "~"), which no URI producer should create (RFC 3986 2.3). */
const ENCODED_UNRESERVED = /%(?:2[de]|3[0-9]|4[1-9a-f]|5[0-9af]|6[1-9a-f]|7[0-9ae])/i;

/**
 * Why a request target's path is refused, or undefined when it is in normal form. A path with
 * dot segments or encoded unreserved characters names another path once normalised (or decoded
 * by the router), e.g. `/v1/../-/reload` or `/%2d/reload` for `/-/reload`: such a path would
 * slip past path rules in front of the gateway, so it is refused rather than resolved. `target`
 * is the raw request target when the server adapter has it (Node normalises `request.url`), else
 * the request URL.
 */
export function unnormalizedPath(target: string): string | undefined {
  let path = target;
  const end = path.search(/[?#]/);
  if (end >= 0) path = path.slice(0, end);
  if (!path.startsWith("/")) {
    // An absolute URL (or absolute-form target): the path starts after the authority.
    const scheme = path.indexOf("://");
    const slash = scheme < 0 ? -1 : path.indexOf("/", scheme + 3);
    path = slash < 0 ? "/" : path.slice(slash);
  }
  if (DOT_SEGMENT.test(path)) return `the request path ${JSON.stringify(path)} has a "." or ".." segment; send the path in normal form`;
  if (ENCODED_UNRESERVED.test(path)) {
    return `the request path ${JSON.stringify(path)} percent-encodes a character that needs no encoding; send the path in normal form`;
  }
  return undefined;
}
