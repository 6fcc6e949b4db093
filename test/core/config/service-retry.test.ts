/** services[].retry in the config: its defaults, and every bad value refused with its path. */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../plugins/config.ts";

function service(retry: string): string {
  return ["services:", "  - type: asr", "    inference_url: http://asr:9000", ...(retry ? [`    retry: ${retry}`] : [])].join("\n");
}

function problemsOf(text: string): string[] {
  try {
    loadConfig(text, {});
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error("expected the config to be rejected");
}

describe("services[].retry", () => {
  it("defaults to one attempt (no retry, the spec's behaviour) with the documented delays and statuses", () => {
    const { config } = loadConfig(service(""), {});
    expect(config.services[0].retry).toEqual({ max_attempts: 1, backoff: "1s", max_backoff: "30s", on_statuses: [429, 500, 502, 503, 504] });
  });

  it("keeps the values that are set", () => {
    const { config } = loadConfig(service("{ max_attempts: 4, backoff: 250ms, max_backoff: 1m, on_statuses: [503] }"), {});
    expect(config.services[0].retry).toEqual({ max_attempts: 4, backoff: "250ms", max_backoff: "1m", on_statuses: [503] });
  });

  it("refuses max_attempts below 1 or not a number, naming the path", () => {
    expect(problemsOf(service("{ max_attempts: 0 }"))).toEqual(["services[0].retry.max_attempts: expected integer to be greater or equal to 1, got 0"]);
    expect(problemsOf(service("{ max_attempts: many }"))).toEqual(['services[0].retry.max_attempts: expected integer, got "many"']);
  });

  it("refuses delays that are zero, malformed, or a cap below the first delay", () => {
    expect(problemsOf(service("{ backoff: 0s }"))).toEqual([
      'services[0].retry.backoff: must be a positive duration, got "0s" (default "1s": the delay before the first retry)',
    ]);
    expect(problemsOf(service("{ max_backoff: 0s }"))).toEqual([
      'services[0].retry.max_backoff: must be a positive duration, got "0s" (default "30s": the longest delay between attempts)',
    ]);
    expect(problemsOf(service("{ backoff: 1m, max_backoff: 10s }"))).toEqual([
      "services[0].retry.max_backoff: 10s is shorter than backoff (1m); raise max_backoff or lower backoff",
    ]);
    expect(problemsOf(service("{ backoff: soon }"))[0]).toMatch(/^services\[0\]\.retry\.backoff: invalid duration "soon"/);
  });

  it("refuses statuses outside 100-599 and unknown keys", () => {
    expect(problemsOf(service("{ on_statuses: [503, 600] }"))).toEqual([
      "services[0].retry.on_statuses[1]: expected integer to be less or equal to 599, got 600",
    ]);
    expect(problemsOf(service("{ on_statuses: [42] }"))).toEqual(["services[0].retry.on_statuses[0]: expected integer to be greater or equal to 100, got 42"]);
    expect(problemsOf(service("{ attempts: 3 }"))).toEqual(['services[0].retry.attempts: unknown key; did you mean "max_attempts"?']);
  });
});
