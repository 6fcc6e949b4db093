/**
 * `inference-gateway` on Deno: `deno run -A adapters/deno/cli.ts [--config FILE] ...`
 * (`deno task start` runs it). The same arguments and behaviour as the Node bin.
 */
import { runCli } from "../cli/main.ts";
import { denoPlatform } from "./platform.ts";
import { run } from "./run.ts";

const write = (stream: { write(bytes: Uint8Array): Promise<number> }) => async (text: string) => {
  const bytes = new TextEncoder().encode(text);
  for (let written = 0; written < bytes.length;) written += await stream.write(bytes.subarray(written));
};

const code = await runCli(Deno.args, { platform: denoPlatform, print: write(Deno.stdout), printError: write(Deno.stderr), serve: run });
// A finished command exits now, whatever a plugin's setup left scheduled.
if (code !== undefined) Deno.exit(code);
