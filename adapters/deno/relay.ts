/**
 * A standalone relay on Deno, as `adapters/deno/cli.ts --role relay`. The CLI is the entry
 * point; this file stays for command lines written before it.
 */
import { run } from "./run.ts";

await run("relay");
