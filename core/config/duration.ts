/**
 * Go-style duration strings ("30s", "1m30s", "1.5h", "8760h"), the format the spec uses
 * for every period and TTL. There is deliberately no "d" unit: days differ in length
 * around DST, so the spec asks for hours ("168h", not "7d").
 */

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;

/** Milliseconds for a duration string, or an error message saying what is wrong. */
export function parseDuration(text: string): number | { error: string } {
  const value = text.trim();
  if (value === "" || value === "0") return 0;
  if (/\d\s*d$|\dd\d/.test(value)) {
    return { error: `invalid duration "${text}": the "d" suffix is not supported, use hours (e.g. "168h" for 7 days)` };
  }
  let sign = 1;
  let rest = value;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    sign = rest.startsWith("-") ? -1 : 1;
    rest = rest.slice(1);
  }
  let total = 0;
  PART.lastIndex = 0;
  let consumed = 0;
  while (consumed < rest.length) {
    PART.lastIndex = consumed;
    const match = PART.exec(rest);
    if (!match) {
      return { error: `invalid duration "${text}": use a number with a unit among ns, us, ms, s, m, h (e.g. "30s", "1m30s", "24h")` };
    }
    total += Number(match[1]) * UNIT_MS[match[2]];
    consumed = PART.lastIndex;
  }
  if (sign < 0) return { error: `invalid duration "${text}": must not be negative` };
  return Math.round(total);
}

/** Milliseconds for a duration already validated by the config schema. */
export function durationMs(text: string | undefined): number {
  if (text === undefined) return 0;
  const parsed = parseDuration(text);
  if (typeof parsed !== "number") throw new Error(parsed.error);
  return parsed;
}

/** Formats milliseconds as the spec's duration strings do ("8760h", "30s", "1m30s"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = (ms % 60_000) / 1000;
  let out = "";
  if (hours) out += `${hours}h`;
  if (minutes) out += `${minutes}m`;
  if (seconds || out === "") out += `${seconds}s`;
  return out;
}
