/**
 * How many gateway processes to run (`server.workers`), decided before anything starts: 1 is
 * today's single process (the caller serves in this process); above 1 this process becomes the
 * primary of that many workers. A config that cannot have workers is refused, with its code,
 * here and by `inference-gateway check` alike (`workersRefusal`).
 */
import { redisModeOf } from "../../core/config/redis-mode.ts";
import { parseConfigFile } from "../../core/config/load.ts";
import type { GatewayConfig } from "../../core/config/schema.ts";
import { ConfigError, type StartErrorCode } from "../../core/errors.ts";
import { silentLogger } from "../../core/log.ts";
import { type BootOptions, configSource, type Platform, refuse } from "../boot.ts";
import { createOffline } from "../cli/offline.ts";

/** `server.workers` as a number: "auto" is the cores this process may run on. */
export function workerCount(setting: number | "auto", availableParallelism: number): number {
  return setting === "auto" ? Math.max(1, availableParallelism) : setting;
}

/** Why the config's `server.workers` cannot run here, or undefined when it can (or is 1). */
export function workersRefusal(config: GatewayConfig, platform: Platform): { code: StartErrorCode; message: string } | undefined {
  const setting = config.server.workers;
  const count = workerCount(setting, platform.availableParallelism());
  if (count === 1) return undefined;
  const workers = setting === "auto" ? `"auto" (${count} cores here)` : String(setting);
  if (redisModeOf(config.redis) === undefined) {
    return {
      code: "GW_WORKERS_NEED_REDIS",
      message: `server.workers is ${workers}, but the key-value store is the embedded one (redis.addr is empty), ` +
        "which lives inside one process: each worker would keep limits, usage, jobs and cached answers of its own. " +
        "Set redis.addr (or redis.sentinel / redis.cluster) so the workers share them, or set server.workers: 1",
    };
  }
  const unsupported = platform.workersUnsupported?.();
  if (unsupported) return { code: "GW_WORKERS_UNSUPPORTED", message: `server.workers is ${workers}, but ${unsupported}` };
  return undefined;
}

/**
 * The number of workers the config asks for; exits with the start error when it asks for
 * several where they cannot run. A file that leaves `server.workers` out (or at 1) is not
 * read further here: the single process's own start reports anything wrong with it.
 */
export async function workersWanted(platform: Platform, options: BootOptions): Promise<number> {
  const { path } = configSource(platform, options);
  if (!platform.exists(path)) return 1;
  try {
    const raw = parseConfigFile(await platform.readTextFile(path), platform.env);
    const server = raw.server as { workers?: unknown } | undefined;
    if (server?.workers === undefined || server.workers === 1) return 1;
  } catch {
    return 1; // unreadable or not YAML: the start says so
  }
  // Several workers: the whole file is checked once here, so a mistake is reported once, not by
  // each worker. Quietly: each worker logs what its plugins say as it starts.
  let config: GatewayConfig;
  try {
    const gateway = await createOffline(platform, path, silentLogger);
    config = gateway.config;
    await gateway.close();
  } catch (error) {
    if (error instanceof ConfigError) refuse(platform, error.code, `${path}: ${error.message}`);
    else refuse(platform, "GW_START_FAILED", `cannot start: ${(error as Error).stack ?? String(error)}`);
    return platform.exit(1);
  }
  const refusal = workersRefusal(config, platform);
  if (refusal) {
    refuse(platform, refusal.code, `cannot start: ${refusal.message}`);
    return platform.exit(1);
  }
  return workerCount(config.server.workers, platform.availableParallelism());
}
