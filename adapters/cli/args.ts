/**
 * The `inference-gateway` command line, parsed the same way on Node and Deno (no runtime API:
 * each runtime's bin passes its arguments in).
 */

export type Role = "gateway" | "relay";

export type Command =
  /** Run the gateway (or a standalone relay). */
  | { kind: "run"; role: Role; configPath?: string; port?: number }
  /** Validate the config, print every problem or what it resolves to (`verbose`: with the plugin order). */
  | { kind: "check"; configPath?: string; verbose: boolean }
  | { kind: "help" }
  | { kind: "version" }
  /** A usage mistake: one line saying what to fix (exit 2). */
  | { kind: "usage-error"; message: string };

export const USAGE = `Usage:
  inference-gateway [--config FILE] [--port N] [--role gateway|relay]
  inference-gateway check [--config FILE] [--verbose]
  inference-gateway --version
  inference-gateway --help

Runs the inference gateway (or, with --role relay, a standalone relay worker).

Commands:
  (none)              serve: the gateway, or the relay with --role relay
  check               validate the config: print every problem with its path (exit 1), or the
                      services, plugins and stores it resolves to (exit 0); connects to nothing

Options:
  --config FILE       the config file; default $CONFIG_PATH, else ./config.yaml, else
                      ./config.example.yaml
  --port N            listen on port N on every interface (the gateway's port; a relay's
                      /metrics port); comes before GATEWAY_ADDR, PORT and RELAY_METRICS_ADDR
  --role ROLE         gateway (default) or relay
  --verbose           with check: also print the plugin order (each plugin's layer and the
                      plugins it waits for) and the middleware, outermost first
  -v, --version       print the version
  -h, --help          print this help

Environment: CONFIG_PATH, GATEWAY_ADDR, PORT, RELAY_METRICS_ADDR, LOG_LEVEL (see docs/configuration.md).
Logs are JSON lines on stdout/stderr; SIGTERM or SIGINT stops gracefully.
`;

const VALUE_OPTIONS = ["--config", "--port", "--role"] as const;
type ValueOption = (typeof VALUE_OPTIONS)[number];

const usageError = (message: string): Command => ({ kind: "usage-error", message: `${message} (inference-gateway --help lists the options)` });

/** Parses the arguments after the program name. The first mistake wins: one line is easier to act on. */
export function parseArgs(argv: readonly string[]): Command {
  const values: Partial<Record<ValueOption, string>> = {};
  let check = false;
  let verbose = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") return { kind: "help" };
    if (arg === "-v" || arg === "--version") return { kind: "version" };
    if (arg === "check" && i === 0) {
      check = true;
      continue;
    }
    if (arg === "--verbose") {
      if (!check) return usageError("--verbose goes with check (inference-gateway check --verbose)");
      if (verbose) return usageError("--verbose is given twice");
      verbose = true;
      continue;
    }
    // --name=value and --name value
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if ((VALUE_OPTIONS as readonly string[]).includes(name)) {
      const option = name as ValueOption;
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined || value === "" || (eq < 0 && value.startsWith("--"))) return usageError(`${option} needs a value`);
      if (values[option] !== undefined) return usageError(`${option} is given twice`);
      values[option] = value;
      continue;
    }
    if (arg.startsWith("-")) return usageError(`unknown option ${name}`);
    return usageError(i === 0 ? `unknown command "${arg}"; the only command is "check"` : `unexpected argument "${arg}"`);
  }

  const configPath = values["--config"];
  if (check) {
    if (values["--port"] !== undefined || values["--role"] !== undefined) return usageError("check takes only --config and --verbose");
    return { kind: "check", configPath, verbose };
  }
  const role = values["--role"] ?? "gateway";
  if (role !== "gateway" && role !== "relay") return usageError(`--role must be gateway or relay, not "${role}"`);
  let port: number | undefined;
  if (values["--port"] !== undefined) {
    port = /^\d+$/.test(values["--port"]) ? Number(values["--port"]) : NaN;
    if (!(port >= 1 && port <= 65535)) return usageError(`--port must be a port number from 1 to 65535, not "${values["--port"]}"`);
  }
  return { kind: "run", role, configPath, port };
}
