/**
 * What `inference-gateway` does with its arguments, on either runtime: each runtime's bin
 * (adapters/node/cli.ts, adapters/deno/cli.ts) passes its primitives and its two servers.
 */
import type { BootOptions, Platform } from "../boot.ts";
import { parseArgs, type Role, USAGE } from "./args.ts";
import { checkConfig } from "./check.ts";
import { gatewayVersion } from "./version.ts";

export interface CliHost {
  platform: Platform;
  /** Writes to stdout; resolves once written (the bin exits right after). */
  print(text: string): Promise<void>;
  /** Writes to stderr; resolves once written. */
  printError(text: string): Promise<void>;
  /** Serves until a signal stops the process (adapters/<runtime>/serve-*.ts). */
  serve(role: Role, options: BootOptions): Promise<void>;
}

/**
 * Runs the command. Resolves with the exit code of a command that is done (help, version,
 * check, a usage mistake: 2), or undefined once a server is up (a signal ends it).
 */
export async function runCli(argv: readonly string[], host: CliHost): Promise<number | undefined> {
  const command = parseArgs(argv);
  switch (command.kind) {
    case "help":
      await host.print(USAGE);
      return 0;
    case "version":
      await host.print(`inference-gateway ${gatewayVersion()}\n`);
      return 0;
    case "usage-error":
      await host.printError(`inference-gateway: ${command.message}\n`);
      return 2;
    case "check": {
      const result = await checkConfig(host.platform, command.configPath, { verbose: command.verbose });
      if (result.stdout) await host.print(result.stdout);
      if (result.stderr) await host.printError(result.stderr);
      return result.exitCode;
    }
    case "run":
      await host.serve(command.role, { configPath: command.configPath, port: command.port });
      return undefined;
  }
}
