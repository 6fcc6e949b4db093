/** Serves as `role` on Node: what the CLI and the older entry files (main.ts, relay.ts) run. */
import type { Role } from "../cli/args.ts";
import { logProcessWarnings } from "../cli/process-warnings.ts";
import type { BootOptions } from "../boot.ts";
import { createLogger, type LogLevel } from "../../core/log.ts";
import { serveGateway } from "./serve-gateway.ts";
import { serveRelay } from "./serve-relay.ts";

export function run(role: Role, options: BootOptions = {}): Promise<void> {
  logProcessWarnings(createLogger({ level: (process.env.LOG_LEVEL as LogLevel | undefined) ?? "info", base: { role } }));
  return role === "gateway" ? serveGateway(options) : serveRelay(options);
}
