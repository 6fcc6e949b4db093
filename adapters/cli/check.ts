/**
 * `inference-gateway check`: the start's own validation (the same `Gateway.create`: the file,
 * the plugins it loads, every plugin's setup) without serving or connecting to anything. The
 * stores are stand-ins that open nothing: Redis and S3 are not reached, so a check runs
 * anywhere (a CI job, a container build) and says only what the file itself gets wrong.
 */
import type { GatewayConfig, ServiceConfig } from "../../core/config/schema.ts";
import { ConfigError, startErrorMessage } from "../../core/errors.ts";
import { Gateway } from "../../core/gateway.ts";
import type { Runtime } from "../../core/plugins/host.ts";
import { PLUGIN_LAYERS } from "../../core/plugins/types.ts";
import { createLogger, type LogEntry } from "../../core/log.ts";
import { configSource, type Platform } from "../boot.ts";
import { redisModeOf } from "../../core/config/redis-mode.ts";
import { workersRefusal } from "../workers/plan.ts";
import { createOffline } from "./offline.ts";

export interface CheckResult {
  exitCode: 0 | 1;
  /** What to print on stdout (success) ... */
  stdout: string;
  /** ... and on stderr (the problems). */
  stderr: string;
}

/** `verbose`: the summary also shows the plugin order (see `pluginOrder`). */
export async function checkConfig(platform: Platform, configPath: string | undefined, options: { verbose?: boolean } = {}): Promise<CheckResult> {
  const { path, from } = configSource(platform, { configPath });
  if (!platform.exists(path)) return { exitCode: 1, stdout: "", stderr: `[GW_CONFIG_NOT_FOUND] ${startErrorMessage("GW_CONFIG_NOT_FOUND", { path, from })}\n` };
  // What plugins warn about while they set up is part of the answer; the rest is noise here.
  const warnings: LogEntry[] = [];
  const log = createLogger({ level: "warn", write: () => {}, repeatWindowMs: 0 });
  log.tap((entry) => warnings.push(entry));
  let gateway: Gateway;
  try {
    gateway = await createOffline(platform, path, log);
  } catch (error) {
    if (!(error instanceof ConfigError)) {
      return { exitCode: 1, stdout: "", stderr: `[GW_START_FAILED] ${path}: ${startErrorMessage("GW_START_FAILED", { error })}\n` };
    }
    const count = error.problems.length === 1 ? "1 problem" : `${error.problems.length} problems`;
    return { exitCode: 1, stdout: "", stderr: `[${error.code}] ${path} (${from}): ${count}\n${error.problems.map((p) => `  ${p}\n`).join("")}` };
  }
  const plugins = [...gateway.runtime.activePlugins];
  const order = options.verbose ? pluginOrder(gateway.runtime) : [];
  const { config } = gateway;
  await gateway.close();
  // What the start refuses besides the file's own problems: workers it cannot run.
  const refusal = workersRefusal(config, platform);
  if (refusal) return { exitCode: 1, stdout: "", stderr: `[${refusal.code}] ${path} (${from}): ${refusal.message}\n` };
  return { exitCode: 0, stdout: summary(path, from, config, plugins, warnings, order), stderr: "" };
}

/**
 * The plugin order as the host computed it: each active plugin in setup order (the order of
 * their routes, middleware and stage steps), its layer and the plugins it waits for; then the
 * middleware, outermost first.
 */
function pluginOrder(runtime: Runtime): string[] {
  const nameWidth = Math.max(0, ...runtime.placements.map((p) => p.definition.name.length)) + 2;
  const layerWidth = Math.max(...PLUGIN_LAYERS.map((layer) => layer.length)) + 2;
  const lines = ["plugin order (setup order; routes, middleware and stage steps are registered in it):"];
  for (const { definition, layer, after } of runtime.placements) {
    const waits = after.length > 0 ? `after ${after.join(", ")}` : "";
    lines.push(`  ${definition.name.padEnd(nameWidth)}${waits ? layer.padEnd(layerWidth) + waits : layer}`);
  }
  lines.push(`middleware, outermost first: ${runtime.middlewareOrder.length > 0 ? runtime.middlewareOrder.join(", ") : "none"}`);
  return lines;
}

function summary(path: string, from: string, config: GatewayConfig, plugins: string[], warnings: LogEntry[], order: string[]): string {
  const lines = [`${path} (${from}): valid`, `services (${config.services.length}):`];
  for (const service of config.services) lines.push(`  ${describeService(service)}`);
  lines.push(`plugins (${plugins.length}): ${plugins.join(", ")}`);
  lines.push(...order);
  lines.push(
    `stores: kv ${redisModeOf(config.redis) === undefined ? "embedded memory (redis.addr is empty)" : `redis ${redisModeOf(config.redis)?.where}`}, ` +
      `objects ${
        config.object_store.endpoint === ""
          ? `files under ${config.object_store.dir}`
          : `S3 ${config.object_store.endpoint} bucket ${config.object_store.bucket}`
      } (not contacted)`,
  );
  lines.push(
    `listen: ${config.server.addr} (server.addr; GATEWAY_ADDR, PORT or --port override it)${
      config.server.workers === 1 ? "" : `, server.workers: ${config.server.workers}`
    }`,
  );
  for (const warning of warnings) lines.push(`warning: ${warning.event}: ${JSON.stringify(warning.fields)}`);
  return `${lines.join("\n")}\n`;
}

/** One line per service: its type, model, what it serves and where it sends it. */
function describeService(service: ServiceConfig): string {
  const parts = [service.type];
  if (service.model) parts.push(`model ${service.model}${service.default ? " (default)" : ""}`);
  const operations = Object.keys(service.operations);
  if (operations.length > 0) parts.push(`operations ${operations.join(", ")}`);
  if (service.provider) parts.push(`provider ${service.provider}`);
  const backends = service.backends.length > 0 ? service.backends.map((b) => b.url) : service.inference_url ? [service.inference_url] : [];
  parts.push(backends.length > 0 ? `-> ${backends.join(", ")}` : service.provider ? "-> the provider's default address" : "-> no backend");
  return parts.join("  ");
}
