/**
 * A standalone relay on Node, as `inference-gateway --role relay`. The CLI
 * (adapters/node/cli.ts) is the entry point; this file stays for command lines written before it.
 */
import { run } from "./run.ts";

await run("relay");
