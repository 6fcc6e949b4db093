#!/usr/bin/env node
/**
 * `inference-gateway` on Node (package.json `bin`; built to dist/adapters/node/cli.js). The
 * process a supervisor runs: it handles SIGTERM / SIGINT itself (adapters/boot.ts).
 */
import type { Role } from "../cli/args.ts";
import { runCli } from "../cli/main.ts";
import { logProcessWarnings } from "../cli/process-warnings.ts";
import { createLogger, type LogLevel } from "../../core/log.ts";
import { nodePlatform } from "./platform.ts";
import { serveGateway } from "./serve-gateway.ts";
import { serveRelay } from "./serve-relay.ts";

const write = (stream: NodeJS.WriteStream) => (text: string) => new Promise<void>((resolve) => stream.write(text, () => resolve()));

const code = await runCli(process.argv.slice(2), {
  platform: nodePlatform,
  print: write(process.stdout),
  printError: write(process.stderr),
  serve(role: Role, options) {
    logProcessWarnings(createLogger({ level: (process.env.LOG_LEVEL as LogLevel | undefined) ?? "info", base: { role } }));
    return role === "gateway" ? serveGateway(options) : serveRelay(options);
  },
});
// A finished command exits now, whatever a plugin's setup left scheduled.
if (code !== undefined) process.exit(code);
