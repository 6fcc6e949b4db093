/**
 * Start-up and shutdown shared by the Node and Deno entry points. It touches no runtime
 * API itself: each entry point passes the few primitives it needs (`Platform`).
 */
import { listenAddressProblem, parseListenAddress, type ListenAddress } from "../core/config/addr.ts";
import { ConfigError, type StartErrorCode } from "../core/errors.ts";
import { durationMs } from "../core/config/duration.ts";
import { Gateway } from "../core/gateway.ts";
import { createOpsApp } from "../core/ops.ts";
import { createLogger, type Logger, type LogLevel } from "../core/log.ts";
import type { PinnedFetch, ProcessRole } from "../core/plugins/types.ts";
import { builtinPlugins } from "../plugins/index.ts";
import { watchParent, type ProcessTable } from "./parent-watch.ts";
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
  const [name, addr] =
    role === "relay"
      ? env.RELAY_METRICS_ADDR ? ["RELAY_METRICS_ADDR", env.RELAY_METRICS_ADDR] : []
      : env.GATEWAY_ADDR ? ["GATEWAY_ADDR", env.GATEWAY_ADDR] : env.PORT ? ["PORT", `:${env.PORT}`] : [];
  if (name === undefined || addr === undefined) return {};
  const address = parseListenAddress(addr);
  return address ? { address } : { problem: listenAddressProblem(`${name} (environment)`, name === "PORT" ? env.PORT! : addr) };
}

/** What the command line chose (adapters/cli/args.ts); absent = the environment's or the default. */
export interface BootOptions {
  /** `--config FILE`: comes before `$CONFIG_PATH`. */
  configPath?: string;
  /** `--port N`: the process's listener on every interface, before `GATEWAY_ADDR` / `PORT` / `RELAY_METRICS_ADDR`. */
  port?: number;
}

/** What chose the config file (the `from` of the `config_source` log line). */
export type ConfigFrom = "--config" | "CONFIG_PATH" | "./config.yaml" | "fallback ./config.example.yaml";

/** Where the config comes from: `--config`, else `$CONFIG_PATH`, else ./config.yaml, else ./config.example.yaml. */
export function configSource(platform: Platform, options: BootOptions = {}): { path: string; from: ConfigFrom } {
  if (options.configPath) return { path: options.configPath, from: "--config" };
  if (platform.env.CONFIG_PATH) return { path: platform.env.CONFIG_PATH, from: "CONFIG_PATH" };
  return platform.exists("config.yaml") ? { path: "config.yaml", from: "./config.yaml" } : { path: "config.example.yaml", from: "fallback ./config.example.yaml" };
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

export async function boot(platform: Platform, role: ProcessRole, options: BootOptions = {}): Promise<Booted> {
  const { path, from } = configSource(platform, options);
  const log = createLogger({ level: (platform.env.LOG_LEVEL as LogLevel | undefined) ?? "info", base: { role } });
  log.info("config_source", { path, from });
  // Every refusal below is one short message saying what to fix, before anything starts.
  if (!platform.exists(path)) {
    refuse(platform, "GW_CONFIG_NOT_FOUND", `cannot start: ${missingConfigMessage(path, from)}`);
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
      readConfig: () => platform.readTextFile(path),
      env: platform.env,
      importModule: (specifier) => platform.importModule(specifier, baseDir),
      openStores,
      lookupHost: platform.lookupHost,
      fetchPinned: platform.fetchPinned,
      readAsset: platform.readAsset,
      fetch: platform.fetch,
      workScope: asyncWorkScope(),
      plugins: builtinPlugins,
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
      refuse(platform, "GW_START_FAILED", `cannot start: ${(error as Error).stack ?? String(error)}`);
    }
    return platform.exit(1);
  }
}

/** A start refusal: its stable code (core/errors.ts, docs/plugins.md) first, then the message. */
function refuse(platform: Platform, code: StartErrorCode, message: string): void {
  platform.writeError(`[${code}] ${message}\n`);
}

/** What to do about a config file that does not exist, by where its path came from. */
export function missingConfigMessage(path: string, from: ConfigFrom): string {
  if (from === "--config") return `--config names ${path}, which does not exist; give the path of your config file (relative to the working directory)`;
  if (from === "CONFIG_PATH") return `CONFIG_PATH names ${path}, which does not exist; point CONFIG_PATH at your config file, or unset it to use ./config.yaml`;
  return `no config file: neither ./config.yaml nor ./config.example.yaml exists in the working directory; run from the gateway's directory, create ./config.yaml or set CONFIG_PATH`;
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
  const where = `${listen.hostname ?? ""}:${listen.port}`;
  const why =
    code === "EADDRINUSE" || name === "AddrInUse"
      ? `the port ${listen.port} is already in use by another process; stop that process or choose another port`
      : code === "EACCES" || name === "PermissionDenied"
        ? `no permission to listen on port ${listen.port} (ports below 1024 need privileges); choose a port from 1024`
        : code === "EADDRNOTAVAIL" || name === "AddrNotAvailable"
          ? `${listen.hostname} is not an address of this machine; use one of its addresses, or ":${listen.port}" for all`
          : (message ?? String(error));
  refuse(platform, "GW_LISTEN_FAILED", `cannot start: cannot listen on ${where}: ${why} (${settings})`);
  await booted.gateway.close().catch(() => undefined);
  return platform.exit(1);
}

/**
 * SIGTERM/SIGINT, or the command that started the process gone (parent-watch.ts): stop
 * accepting, let in-flight requests finish, stop tasks, close stores.
 */
export function handleShutdown(platform: Platform, booted: Booted, stopServer: () => Promise<void>): void {
  let stopping = false;
  const shutDown = (cause: { signal: string } | { reason: "parent_gone" }) => {
    stopping = true;
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
}
