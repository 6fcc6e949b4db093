/** The `inference-gateway` argument parser (adapters/cli/args.ts): what each command line means, and the one-line mistakes. */
import { describe, expect, it } from "vitest";
import { parseArgs } from "../../../adapters/cli/args.ts";

describe("parseArgs", () => {
  it("no arguments run the gateway with the default config", () => {
    expect(parseArgs([])).toEqual({ kind: "run", role: "gateway", configPath: undefined, port: undefined });
  });

  it("--config, --port and --role, as two arguments or with =", () => {
    expect(parseArgs(["--config", "a.yaml", "--port=9000", "--role", "relay"])).toEqual({ kind: "run", role: "relay", configPath: "a.yaml", port: 9000 });
    expect(parseArgs(["--config=b.yaml"])).toEqual({ kind: "run", role: "gateway", configPath: "b.yaml", port: undefined });
  });

  it("check takes --config and --verbose only", () => {
    expect(parseArgs(["check", "--config", "c.yaml"])).toEqual({ kind: "check", configPath: "c.yaml", verbose: false });
    expect(parseArgs(["check"])).toEqual({ kind: "check", configPath: undefined, verbose: false });
    expect(parseArgs(["check", "--verbose", "--config", "c.yaml"])).toEqual({ kind: "check", configPath: "c.yaml", verbose: true });
    expect(parseArgs(["check", "--port", "1"])).toMatchObject({
      kind: "usage-error",
      message: expect.stringContaining("check takes only --config and --verbose"),
    });
  });

  it("--help and --version win over everything else", () => {
    expect(parseArgs(["--port", "1", "--help"])).toEqual({ kind: "help" });
    expect(parseArgs(["-h"])).toEqual({ kind: "help" });
    expect(parseArgs(["--version"])).toEqual({ kind: "version" });
    expect(parseArgs(["-v"])).toEqual({ kind: "version" });
  });

  it.each([
    [["--bogus"], "unknown option --bogus"],
    [["--bogus=1"], "unknown option --bogus"],
    [["serve"], 'unknown command "serve"; the only command is "check"'],
    [["--config"], "--config needs a value"],
    [["--config", "--port", "1"], "--config needs a value"],
    [["--port", "0"], '--port must be a port number from 1 to 65535, not "0"'],
    [["--port", "8080x"], '--port must be a port number from 1 to 65535, not "8080x"'],
    [["--port", "70000"], '--port must be a port number from 1 to 65535, not "70000"'],
    [["--role", "worker"], '--role must be gateway or relay, not "worker"'],
    [["--config", "a", "--config", "b"], "--config is given twice"],
    [["--config", "a", "extra"], 'unexpected argument "extra"'],
    [["--verbose"], "--verbose goes with check (inference-gateway check --verbose)"],
    [["check", "--verbose", "--verbose"], "--verbose is given twice"],
  ])("%j is refused: %s", (argv, message) => {
    expect(parseArgs(argv)).toEqual({ kind: "usage-error", message: `${message} (inference-gateway --help lists the options)` });
  });
});
