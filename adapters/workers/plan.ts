/**
 * How many gateway processes to run (`server.workers`), decided before anything starts: 1 is
 * today's single process (the caller serves in this process); above 1 this process becomes the
 * primary of that many workers. A config that cannot have workers is refused here, with its code.
 */
import { redisModeOf } from "../../core/config/redis-mode.ts";
import { parseConfigFile } from "../../core/config/load.ts";
import { ConfigError, startErrorMessage } from "../../core/errors.ts";
import { silentLogger } from "../../core/log.ts";
import { configSource, refuse, type BootOptions, type Platform } from "../boot.ts";
import { createOffline } from "../cli/check.ts";

/** `server.workers` as a number: "auto" is the cores this process may run on. */
export function workerCount(setting: number | "auto", availableParallelism: number): number {
  return setting === "auto" ? Math.max(1, availableParallelism) : setting;
}

/** The setting as written, for messages: `2`, or `"auto" (2 here)`. */
function described(setting: number | "auto", count: number): string {
  return setting === "auto" ? `"auto" (${count} cores here)` : String(setting);
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
  let gateway;
  try {
    gateway = await createOffline(platform, path, silentLogger);
  } catch (error) {
    if (error instanceof ConfigError) refuse(platform, error.code, `${path}: ${error.message}`);
    else refuse(platform, "GW_START_FAILED", `cannot start: ${(error as Error).stack ?? String(error)}`);
    return platform.exit(1);
  }
  const { config } = gateway;
  await gateway.close();
  const setting = config.server.workers;
  const count = workerCount(setting, platform.availableParallelism());
  if (count === 1) return 1;
  if (redisModeOf(config.redis) === undefined) {
    refuse(platform, "GW_WORKERS_NEED_REDIS", startErrorMessage("GW_WORKERS_NEED_REDIS", { workers: described(setting, count) }));
    return platform.exit(1);
  }
  const unsupported = platform.workersUnsupported?.();
  if (unsupported) {
    refuse(platform, "GW_WORKERS_UNSUPPORTED", startErrorMessage("GW_WORKERS_UNSUPPORTED", { workers: described(setting, count), why: unsupported }));
    return platform.exit(1);
  }
  return count;
}
