/**
 * `inference-gateway` on Deno: `deno run -A adapters/deno/cli.ts [--config FILE] ...`
 * (`deno task start` runs it). The same arguments and behaviour as the Node bin.
 */
import type { Role } from "../cli/args.ts";
import { runCli } from "../cli/main.ts";
import { logProcessWarnings } from "../cli/process-warnings.ts";
import { createLogger, type LogLevel } from "../../core/log.ts";
import { denoPlatform } from "./platform.ts";
import { serveGateway } from "./serve-gateway.ts";
import { serveRelay } from "./serve-relay.ts";

const write = (stream: { write(bytes: Uint8Array): Promise<number> }) => async (text: string) => {
  const bytes = new TextEncoder().encode(text);
  for (let written = 0; written < bytes.length; ) written += await stream.write(bytes.subarray(written));
};

const code = await runCli(Deno.args, {
  platform: denoPlatform,
  print: write(Deno.stdout),
  printError: write(Deno.stderr),
  serve(role: Role, options) {
    logProcessWarnings(createLogger({ level: (Deno.env.get("LOG_LEVEL") as LogLevel | undefined) ?? "info", base: { role } }));
    return role === "gateway" ? serveGateway(options) : serveRelay(options);
  },
});
// A finished command exits now, whatever a plugin's setup left scheduled.
if (code !== undefined) Deno.exit(code);
