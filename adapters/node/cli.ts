#!/usr/bin/env node
/**
 * `inference-gateway` on Node (package.json `bin`; built to dist/adapters/node/cli.js). The
 * process a supervisor runs: it handles SIGTERM / SIGINT itself (adapters/boot.ts).
 */
import { runCli } from "../cli/main.ts";
import { nodePlatform } from "./platform.ts";
import { run } from "./run.ts";

const write = (stream: NodeJS.WriteStream) => (text: string) => new Promise<void>((resolve) => stream.write(text, () => resolve()));

const code = await runCli(process.argv.slice(2), { platform: nodePlatform, print: write(process.stdout), printError: write(process.stderr), serve: run });
// A finished command exits now, whatever a plugin's setup left scheduled.
if (code !== undefined) process.exit(code);
