/**
 * The gateway on Node with no arguments, as `inference-gateway` with none. The CLI
 * (adapters/node/cli.ts) is the entry point; this file stays for command lines written before it.
 */
import { run } from "./run.ts";

await run("gateway");
