/**
 * The spans of the batch APIs (`completion_window`, `batches.retention`): a Go-style duration
 * ("24h", "90m") or a whole number of days ("30d"), as the OpenAI API writes its windows. The
 * rest of the config has no "d" unit; these two are the batch APIs' own vocabulary.
 */
import { parseDuration } from "../../core/config/duration.ts";

const DAY_MS = 24 * 3_600_000;
const DAYS = /^(\d+)d$/;

/** Milliseconds of a span, or undefined when it is neither a duration nor a whole number of days. */
export function spanMs(text: string): number | undefined {
  const value = text.trim();
  const days = DAYS.exec(value);
  if (days) return Number(days[1]) * DAY_MS;
  const parsed = parseDuration(value);
  return typeof parsed === "number" ? parsed : undefined;
}

/** The config problem of a span that is not a positive duration (none when it is). */
export function spanProblem(path: string, text: string): string[] {
  const ms = spanMs(text);
  if (ms === undefined) return [`${path}: "${text}" is not a duration; write hours or days, e.g. "24h" or "30d"`];
  if (ms <= 0) return [`${path}: must be longer than 0, got "${text}"`];
  return [];
}
