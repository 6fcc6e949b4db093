/**
 * Calendar buckets of the usage report (docs/design.md#usage-report), all in UTC: days `YYYYMMDD`,
 * ISO 8601 weeks `YYYY-Www` (weeks start on Monday; week 1 holds the year's first Thursday, so a
 * year has 52 or 53 weeks and early-January or late-December days can belong to the
 * neighbouring year's week), months `YYYYMM`.
 */

export type Period = "daily" | "weekly" | "monthly";
export const PERIODS: readonly Period[] = ["daily", "weekly", "monthly"];

export const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;

const pad = (value: number, width: number) => String(value).padStart(width, "0");

/** Monday 00:00 UTC of the week holding `ms`. */
export function mondayOf(ms: number): number {
  const day = Math.floor(ms / DAY_MS) * DAY_MS;
  const weekday = (new Date(day).getUTCDay() + 6) % 7; // Monday = 0
  return day - weekday * DAY_MS;
}

/** The ISO week-numbering year and week of the day holding `ms`. */
export function isoWeek(ms: number): { year: number; week: number } {
  // The Thursday of the same ISO week decides the year; the week is its ordinal week.
  const thursday = mondayOf(ms) + 3 * DAY_MS;
  const year = new Date(thursday).getUTCFullYear();
  const week = Math.floor((thursday - Date.UTC(year, 0, 1)) / WEEK_MS) + 1;
  return { year, week };
}

export function dayLabel(ms: number): string {
  const date = new Date(ms);
  return `${pad(date.getUTCFullYear(), 4)}${pad(date.getUTCMonth() + 1, 2)}${pad(date.getUTCDate(), 2)}`;
}

export function weekLabel(ms: number): string {
  const { year, week } = isoWeek(ms);
  return `${pad(year, 4)}-W${pad(week, 2)}`;
}

export function monthLabel(ms: number): string {
  const date = new Date(ms);
  return `${pad(date.getUTCFullYear(), 4)}${pad(date.getUTCMonth() + 1, 2)}`;
}

export function labelOf(period: Period, ms: number): string {
  return period === "daily" ? dayLabel(ms) : period === "weekly" ? weekLabel(ms) : monthLabel(ms);
}

/** 00:00 UTC of a `YYYY-MM-DD` date, or undefined when the text is not a real date. */
export function parseDay(text: string): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const ms = Date.UTC(year, month - 1, day);
  const date = new Date(ms);
  // Date.UTC rolls 2025-02-30 over to March; a real date comes back unchanged.
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  return ms;
}

const monthIndex = (ms: number) => {
  const date = new Date(ms);
  return date.getUTCFullYear() * 12 + date.getUTCMonth();
};

/** How many buckets of `period` the days `from`..`to` (inclusive, `from <= to`) touch. */
export function bucketCount(period: Period, from: number, to: number): number {
  if (period === "daily") return Math.round((to - from) / DAY_MS) + 1;
  if (period === "weekly") return Math.round((mondayOf(to) - mondayOf(from)) / WEEK_MS) + 1;
  return monthIndex(to) - monthIndex(from) + 1;
}

/** The label of every bucket the days `from`..`to` touch, in order (compute `bucketCount` first to bound it). */
export function bucketLabels(period: Period, from: number, to: number): string[] {
  const labels: string[] = [];
  if (period === "daily") {
    for (let day = from; day <= to; day += DAY_MS) labels.push(dayLabel(day));
  } else if (period === "weekly") {
    for (let monday = mondayOf(from); monday <= to; monday += WEEK_MS) labels.push(weekLabel(monday));
  } else {
    const first = new Date(from);
    for (let index = 0;; index++) {
      const start = Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + index, 1);
      if (start > to) break;
      labels.push(monthLabel(start));
    }
  }
  return labels;
}
