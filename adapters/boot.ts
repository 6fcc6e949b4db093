/**
 * Start-up and shutdown shared by the Node and Deno entry points. It touches no runtime
 * API itself: each entry point passes the few primitives it needs (`Platform`).
 */
import { ConfigError } from "../core/config/load.ts";
import { durationMs } from "../core/config/duration.ts";
import { Gateway } from "../core/gateway.ts";
import { createLogger, type Logger, type LogLevel } from "../core/log.ts";
import type { ProcessRole } from "../core/plugins/types.ts";
import { builtinPlugins } from "../plugins/index.ts";
import { openStores } from "./stores.ts";

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
  lookupHost(hostname: string): Promise<string[]>;
  /** Reads a file of an installed package ("swagger-ui-dist/swagger-ui.css"), resolved from the gateway's own code. */
  readAsset(path: string): Promise<Uint8Array>;
  /** The HTTP client for backends and webhooks, when the runtime has a faster one than its global fetch. */
  fetch?: typeof fetch;
}

export interface ListenAddress {
  hostname?: string;
  port: number;
}

/** ":8080" -> all interfaces; "127.0.0.1:9000" -> that host. `GATEWAY_ADDR` / `PORT` override the config. */
export function listenAddress(configured: string, env: Platform["env"]): ListenAddress {
  const addr = env.GATEWAY_ADDR || (env.PORT ? `:${env.PORT}` : configured);
  const at = addr.lastIndexOf(":");
  const host = at > 0 ? addr.slice(0, at).replace(/^\[|\]$/g, "") : "";
  const port = Number(at >= 0 ? addr.slice(at + 1) : addr);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError([`server.addr: "${addr}" is not host:port or :port`]);
  return { hostname: host === "" ? undefined : host, port };
}

/** `$CONFIG_PATH`, else ./config.yaml, else ./config.example.yaml. */
export function configPath(platform: Platform): string {
  if (platform.env.CONFIG_PATH) return platform.env.CONFIG_PATH;
  return platform.exists("config.yaml") ? "config.yaml" : "config.example.yaml";
}

export interface Booted {
  gateway: Gateway;
  log: Logger;
  /** Server timeouts in ms (0 = none). */
  timeouts: { read: number; write: number; idle: number };
}

export async function boot(platform: Platform, role: ProcessRole): Promise<Booted> {
  const path = configPath(platform);
  const log = createLogger({ level: (platform.env.LOG_LEVEL as LogLevel | undefined) ?? "info", base: { role } });
  log.info("config_source", { path, from: platform.env.CONFIG_PATH ? "CONFIG_PATH" : path === "config.yaml" ? "./config.yaml" : "fallback ./config.example.yaml" });
  const baseDir = platform.dirname(path);
  try {
    const gateway = await Gateway.create({
      role,
      readConfig: () => platform.readTextFile(path),
      env: platform.env,
      importModule: (specifier) => platform.importModule(specifier, baseDir),
      openStores,
      lookupHost: platform.lookupHost,
      readAsset: platform.readAsset,
      fetch: platform.fetch,
      plugins: builtinPlugins,
      log,
    });
    const server = gateway.config.server;
    return {
      gateway,
      log,
      timeouts: { read: durationMs(server.read_timeout), write: durationMs(server.write_timeout), idle: durationMs(server.idle_timeout) },
    };
  } catch (error) {
    if (error instanceof ConfigError) {
      platform.writeError(`${path}: ${error.message}\n`);
    } else {
      platform.writeError(`cannot start: ${(error as Error).stack ?? String(error)}\n`);
    }
    return platform.exit(1);
  }
}

/** SIGTERM/SIGINT: stop accepting, let in-flight requests finish, stop tasks, close stores. */
export function handleShutdown(platform: Platform, booted: Booted, stopServer: () => Promise<void>): void {
  let stopping = false;
  platform.onSignals(["SIGTERM", "SIGINT"], (signal) => {
    if (stopping) return;
    stopping = true;
    booted.log.info("shutdown", { signal });
    void (async () => {
      await stopServer();
      await booted.gateway.close();
      booted.log.info("stopped", { signal });
      platform.exit(0);
    })();
  });
}
