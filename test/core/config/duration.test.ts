import { describe, expect, it } from "vitest";
import { durationMs, formatDuration, parseDuration } from "../../../core/config/duration.ts";

/** The error message of an invalid duration (fails the test when the text parses). */
function errorOf(text: string): string {
  const parsed = parseDuration(text);
  if (typeof parsed === "number") throw new Error(`expected "${text}" to be rejected, got ${parsed} ms`);
  return parsed.error;
}

describe("parseDuration", () => {
  it.each([
    ["30s", 30_000],
    ["1m30s", 90_000],
    ["1.5h", 5_400_000],
    ["8760h", 8760 * 3_600_000],
    ["250ms", 250],
    ["24h", 86_400_000],
    ["168h", 7 * 86_400_000],
    ["0s", 0],
    ["0", 0],
    ["", 0],
    [" 30s ", 30_000],
  ])("%j is %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["5d", "1d12h"])("%j is rejected, naming the d suffix and asking for hours", (text) => {
    const message = errorOf(text);
    expect(message).toContain(`"${text}"`);
    expect(message).toMatch(/"d" suffix is not supported/);
    expect(message).toMatch(/use hours/);
    expect(message).toContain("168h");
  });

  it.each(["abc", "10", "1h 30m", "h", "30x"])("%j is rejected with the accepted units", (text) => {
    const message = errorOf(text);
    expect(message).toContain(`invalid duration "${text}"`);
    expect(message).toMatch(/ns, us, ms, s, m, h/);
  });

  it("rejects a negative duration", () => {
    expect(errorOf("-1s")).toBe('invalid duration "-1s": must not be negative');
  });
});

describe("durationMs", () => {
  it("converts a valid duration and treats an absent one as 0", () => {
    expect(durationMs("1m")).toBe(60_000);
    expect(durationMs(undefined)).toBe(0);
    expect(durationMs("")).toBe(0);
  });

  it("throws the parse error for an invalid duration", () => {
    expect(() => durationMs("7d")).toThrow(/use hours/);
  });
});

describe("formatDuration", () => {
  it.each([
    [0, "0s"],
    [30_000, "30s"],
    [90_000, "1m30s"],
    [5_400_000, "1h30m"],
    [3_600_000, "1h"],
    [8760 * 3_600_000, "8760h"],
    [1_500, "1.5s"],
  ])("%d ms is %j", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([0, 30_000, 90_000, 5_400_000, 8760 * 3_600_000, 1_500, 3_723_000])("%d ms survives a round trip", (ms) => {
    expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});
