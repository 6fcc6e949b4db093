/**
 * The gateway on Deno with no arguments, as `adapters/deno/cli.ts` with none. The CLI is the
 * entry point; this file stays for command lines written before it.
 */
import { run } from "./run.ts";

await run("gateway");
