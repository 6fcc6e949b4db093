/**
 * Start-up and shutdown shared by the Node and Deno entry points. It touches no runtime
 * API itself: each entry point passes the few primitives it needs (`Platform`).
 */
import { type ListenAddress, parseListenAddress } from "../core/config/addr.ts";
import { ConfigError, type StartErrorCode, startErrorMessage } from "../core/errors.ts";
import { durationMs } from "../core/config/duration.ts";
import { Gateway } from "../core/gateway.ts";
import { createOpsApp } from "../core/ops.ts";
import { createLogger, type Logger, type LogLevel } from "../core/log.ts";
import type { GatewayConfig } from "../core/config/schema.ts";
import type { PinnedFetch, PluginDefinition, ProcessRole } from "../core/plugins/types.ts";
import { builtinPlugins } from "../plugins/index.ts";
import { type ProcessTable, watchParent } from "./parent-watch.ts";
import { openStores } from "./stores.ts";
import { asyncWorkScope } from "./work-scope.ts";

export interface Platform {
  env: Readonly<Record<string, string | undefined>>;
  exists(path: string): boolean;
  readTextFile(path: string): Promise<string>;
  /** Imports a module by path, resolved against `baseDir`. */
  importModule(path: string, baseDir: string): Promise<unknown>;
  dirname(path: string): string;
  writeError(text: string): void;
  exit(code: number): never;
  onSignals(signals: readonly string[], handler: (signal: string) => void): void;
  /** This process's parent and /proc, to notice the command that started it is gone (parent-watch.ts). */
  processes: ProcessTable;
  lookupHost(hostname: string): Promise<string[]>;
  /** Connects to addresses the webhook SSRF check vetted, never to a fresh resolution of the name. */
  fetchPinned: PinnedFetch;
  /** Reads a file of an installed package ("swagger-ui-dist/swagger-ui.css"), resolved from the gateway's own code. */
  readAsset(path: string): Promise<Uint8Array>;
  /** The HTTP client for backends (webhooks use `fetchPinned`), when the runtime has a faster one than its global fetch. */
  fetch?: typeof fetch;
  /** The CPU cores this process may run on (`server.workers: auto`). */
  availableParallelism(): number;
  /** Why this runtime cannot run `server.workers` above 1 here, or undefined when it can. */
  workersUnsupported?(): string | undefined;
}

/**
 * The environment override of the process's listen address: for the gateway `GATEWAY_ADDR` /
 * `PORT` (of `server.addr`), for a standalone relay `RELAY_METRICS_ADDR` (of
 * `relay.metrics_addr`, so relays sharing one config file on one host can take a port each).
 * Undefined when none is set, a problem (naming the variable) when the value is not an address.
 */
function listenOverride(env: Platform["env"], role: ProcessRole, port: number | undefined): { address?: ListenAddress; problem?: string } {
  // The command line's --port comes before every variable (the CLI checked it is a port).
  if (port !== undefined) return { address: parseListenAddress(`:${port}`) };
  const [name, addr] = role === "relay"
    ? env.RELAY_METRICS_ADDR ? ["RELAY_METRICS_ADDR", env.RELAY_METRICS_ADDR] : []
    : env.GATEWAY_ADDR
    ? ["GATEWAY_ADDR", env.GATEWAY_ADDR]
    : env.PORT
    ? ["PORT", `:${env.PORT}`]
    : [];
  if (name === undefined || addr === undefined) return {};
  const address = parseListenAddress(addr);
  return address ? { address } : { problem: startErrorMessage("GW_ENV_INVALID", { variable: name, value: name === "PORT" ? env.PORT! : addr }) };
}

/** What the command line chose (adapters/cli/args.ts); absent = the environment's or the default. */
export interface BootOptions {
  /** `--config FILE`: comes before `$CONFIG_PATH`. */
  configPath?: string;
  /** `--port N`: the process's listener on every interface, before `GATEWAY_ADDR` / `PORT` / `RELAY_METRICS_ADDR`. */
  port?: number;
}

/**
 * A gateway process that is one of several workers of one listener (`server.workers`): its
 * number, the config text its primary hands it, and whether it runs the embedded relay.
 */
export interface WorkerBoot {
  /** 1..N; every log line carries it as `worker`. */
  index: number;
  readConfig(): Promise<string>;
  /** False: the relay plugin stays off here even with `relay.embedded`, so the relay runs in one worker only. */
  runsRelay: boolean;
}

/** What chose the config file (the `from` of the `config_source` log line). */
export type ConfigFrom = "--config" | "CONFIG_PATH" | "./config.yaml" | "fallback ./config.example.yaml";

/** Where the config comes from: `--config`, else `$CONFIG_PATH`, else ./config.yaml, else ./config.example.yaml. */
export function configSource(platform: Platform, options: BootOptions = {}): { path: string; from: ConfigFrom } {
  if (options.configPath) return { path: options.configPath, from: "--config" };
  if (platform.env.CONFIG_PATH) return { path: platform.env.CONFIG_PATH, from: "CONFIG_PATH" };
  return platform.exists("config.yaml")
    ? { path: "config.yaml", from: "./config.yaml" }
    : { path: "config.example.yaml", from: "fallback ./config.example.yaml" };
}

export interface Booted {
  gateway: Gateway;
  log: Logger;
  /** Where the gateway listens: `server.addr`, or the `GATEWAY_ADDR` / `PORT` override. */
  listen: ListenAddress;
  /** Server timeouts in ms (0 = none). */
  timeouts: { read: number; write: number; idle: number };
  /**
   * A standalone relay's listener (role "relay" with `relay.metrics_addr` or
   * `RELAY_METRICS_ADDR` set): where it listens and what it answers (`/health`, `/metrics`).
   */
  metrics?: { listen: ListenAddress; fetch: (request: Request) => Response | Promise<Response> };
}

const GATEWAY_LISTEN_SETTINGS = "server.addr, or the GATEWAY_ADDR / PORT environment variables";
const RELAY_LISTEN_SETTINGS = "relay.metrics_addr, or the RELAY_METRICS_ADDR environment variable";

/** The built-in plugins, with the relay kept out of the gateway unless `worker` runs it. */
function pluginsFor(worker: WorkerBoot | undefined): readonly PluginDefinition[] {
  if (!worker || worker.runsRelay) return builtinPlugins;
  return builtinPlugins.map((
    plugin,
  ) => (plugin.name === "relay" ? { ...plugin, enabled: (_config: GatewayConfig, role: ProcessRole) => role === "relay" } : plugin));
}

export async function boot(platform: Platform, role: ProcessRole, options: BootOptions = {}, worker?: WorkerBoot): Promise<Booted> {
  const { path, from } = configSource(platform, options);
  const log = createLogger({ level: (platform.env.LOG_LEVEL as LogLevel | undefined) ?? "info", base: worker ? { role, worker: worker.index } : { role } });
  log.info("config_source", { path, from });
  // Every refusal below is one short message saying what to fix, before anything starts.
  if (!platform.exists(path)) {
    refuse(platform, "GW_CONFIG_NOT_FOUND", `cannot start: ${startErrorMessage("GW_CONFIG_NOT_FOUND", { path, from })}`);
    return platform.exit(1);
  }
  const override = listenOverride(platform.env, role, options.port);
  if (override.problem) {
    refuse(platform, "GW_ENV_INVALID", `cannot start: ${override.problem}`);
    return platform.exit(1);
  }
  const baseDir = platform.dirname(path);
  try {
    const gateway = await Gateway.create({
      role,
      readConfig: worker ? () => worker.readConfig() : () => platform.readTextFile(path),
      env: platform.env,
      importModule: (specifier) => platform.importModule(specifier, baseDir),
      openStores,
      lookupHost: platform.lookupHost,
      fetchPinned: platform.fetchPinned,
      readAsset: platform.readAsset,
      fetch: platform.fetch,
      workScope: asyncWorkScope(),
      plugins: pluginsFor(worker),
      log,
      // The tasks start once the process listens (adapters call gateway.start()): a process that
      // cannot listen takes no job. A relay without a metrics listener starts them below.
      deferStart: true,
    });
    const server = gateway.config.server;
    // server.addr and relay.metrics_addr passed config validation, so they parse.
    const metricsAddr = gateway.config.relay.metrics_addr;
    const metricsListen = role === "relay" ? (override.address ?? (metricsAddr === "" ? undefined : parseListenAddress(metricsAddr))) : undefined;
    if (role === "relay" && !metricsListen) gateway.start();
    return {
      gateway,
      log,
      listen: (role === "gateway" ? override.address : undefined) ?? parseListenAddress(server.addr)!,
      timeouts: { read: durationMs(server.read_timeout), write: durationMs(server.write_timeout), idle: durationMs(server.idle_timeout) },
      // The registry and stores are the process's, shared by every runtime a reload builds.
      metrics: metricsListen && { listen: metricsListen, fetch: createOpsApp(gateway.runtime.deps).fetch },
    };
  } catch (error) {
    if (error instanceof ConfigError) {
      refuse(platform, error.code, `${path}: ${error.message}`);
    } else {
      refuse(platform, "GW_START_FAILED", `cannot start: ${startErrorMessage("GW_START_FAILED", { error })}`);
    }
    return platform.exit(1);
  }
}

/** A start refusal: its stable code (core/errors.ts, docs/plugins.md) first, then the message. */
export function refuse(platform: Platform, code: StartErrorCode, message: string): void {
  platform.writeError(`[${code}] ${message}\n`);
}

/**
 * The server could not listen (port taken, no permission, address not on this host): one line
 * saying what to change instead of the runtime's unhandled-error trace, then a clean exit 1.
 * Node reports `code` ("EADDRINUSE"), Deno the error class name ("AddrInUse"). The listener is
 * the gateway's, or a standalone relay's metrics listener (`booted.metrics`).
 */
export async function listenFailed(platform: Platform, booted: Booted, error: unknown): Promise<never> {
  const { code, name, message } = error as { code?: string; name?: string; message?: string };
  const listen = booted.metrics?.listen ?? booted.listen;
  const settings = booted.metrics ? RELAY_LISTEN_SETTINGS : GATEWAY_LISTEN_SETTINGS;
  const cause = code === "EADDRINUSE" || name === "AddrInUse"
    ? "in_use"
    : code === "EACCES" || name === "PermissionDenied"
    ? "no_permission"
    : code === "EADDRNOTAVAIL" || name === "AddrNotAvailable"
    ? "not_local"
    : undefined;
  const refusal = startErrorMessage("GW_LISTEN_FAILED", { hostname: listen.hostname, port: listen.port, cause, detail: message ?? String(error), settings });
  refuse(platform, "GW_LISTEN_FAILED", `cannot start: ${refusal}`);
  await booted.gateway.close().catch(() => undefined);
  return platform.exit(1);
}

/** Why a process stops: a signal, its wrapper gone, or (a worker) its primary asking or gone. */
export type ShutdownCause = { signal: string } | { reason: "parent_gone" | "primary_stop" | "primary_gone" };

/**
 * SIGTERM/SIGINT, or the command that started the process gone (parent-watch.ts): stop
 * accepting, let in-flight requests finish, stop tasks, close stores. Returns what starts the
 * same shutdown from elsewhere (a worker's primary); once stopping, calling it does nothing.
 */
export function handleShutdown(platform: Platform, booted: Booted, stopServer: () => Promise<void>): (cause: ShutdownCause) => void {
  let stopping = false;
  // A worker told to stop by its primary often gets the same stop as a signal of its own too
  // (Ctrl-C reaches the whole process group, systemd signals every process of the service):
  // that first signal is not the "second signal" that means now.
  let signalIsSecond = false;
  const shutDown = (cause: ShutdownCause) => {
    if (stopping) return;
    stopping = true;
    signalIsSecond = "signal" in cause || cause.reason === "parent_gone";
    unwatch?.();
    booted.log.info("shutdown", cause);
    void (async () => {
      await stopServer();
      await booted.gateway.close();
      booted.log.info("stopped", cause);
      platform.exit(0);
    })();
  };
  platform.onSignals(["SIGTERM", "SIGINT"], (signal) => {
    if (stopping && !signalIsSecond) {
      signalIsSecond = true;
      return;
    }
    if (stopping) {
      // A second signal means "now": an operator (or a second Ctrl-C) does not have to wait
      // for a request hung on a slow backend, which may take up to server.backend_timeout.
      booted.log.warn("shutdown_forced", { signal, message: "a second signal while stopping: exiting without waiting for in-flight work" });
      platform.exit(1);
    }
    shutDown({ signal });
  });
  const unwatch = watchParent(platform.processes, platform.env, (link) => {
    if (stopping) return;
    booted.log.warn("parent_gone", {
      // This process's parent exited, or a process of the wrapper (a shell, deno's task runner) lost its own.
      ...(link.pid === 0 ? { parent: link.parent } : { wrapper_process: link.pid, its_parent: link.parent }),
      message: "the command that started the gateway (npx, npm, deno task) is gone, and its signal may never come: shutting down as on SIGTERM",
    });
    shutDown({ reason: "parent_gone" });
  });
  return shutDown;
}
