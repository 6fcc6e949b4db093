/**
 * Calendar buckets of the usage report (docs/design.md#usage-report): UTC days, ISO 8601 weeks,
 * months.
 */
import { describe, expect, it } from "vitest";
import { bucketCount, bucketLabels, dayLabel, isoWeek, labelOf, mondayOf, monthLabel, parseDay, weekLabel } from "../../../plugins/usage/calendar.ts";

const day = (text: string): number => {
  const ms = parseDay(text);
  if (ms === undefined) throw new Error(`bad test date ${text}`);
  return ms;
};

describe("ISO weeks", () => {
  it.each([
    // 2026 starts on a Thursday, so it has 53 weeks and its last week runs into 2027.
    ["2026-01-01", "2026-W01"],
    ["2025-12-29", "2026-W01"],
    ["2026-12-28", "2026-W53"],
    ["2026-12-31", "2026-W53"],
    ["2027-01-01", "2026-W53"],
    ["2027-01-03", "2026-W53"],
    ["2027-01-04", "2027-W01"],
    // Another 53-week year, seen from both sides of its year boundary.
    ["2020-12-31", "2020-W53"],
    ["2021-01-01", "2020-W53"],
    ["2021-01-04", "2021-W01"],
    ["2009-12-31", "2009-W53"],
    ["2010-01-03", "2009-W53"],
    // Late-December days that already belong to the next year's week 1.
    ["2024-12-29", "2024-W52"],
    ["2024-12-30", "2025-W01"],
    ["2008-12-29", "2009-W01"],
    // A Sunday ends its week; a mid-year week.
    ["2026-01-04", "2026-W01"],
    ["2026-01-05", "2026-W02"],
    ["2026-07-15", "2026-W29"],
  ])("%s is in %s", (date, label) => {
    expect(weekLabel(day(date))).toBe(label);
  });

  it("counts 52 or 53 weeks a year: the week of December 28 is always the last", () => {
    const weeksIn = (year: number) => isoWeek(Date.UTC(year, 11, 28)).week;
    expect([2015, 2020, 2026, 2032].map(weeksIn)).toEqual([53, 53, 53, 53]);
    expect([2021, 2022, 2023, 2024, 2025, 2027].map(weeksIn)).toEqual([52, 52, 52, 52, 52, 52]);
  });

  it("finds Monday 00:00 UTC for any moment of the week", () => {
    expect(mondayOf(Date.parse("2027-01-03T23:59:59Z"))).toBe(day("2026-12-28"));
    expect(mondayOf(Date.parse("2026-12-28T00:00:00Z"))).toBe(day("2026-12-28"));
  });
});

describe("day and month labels", () => {
  it("label by UTC, whatever the time of day", () => {
    const ms = Date.parse("2026-12-31T23:59:59.999Z");
    expect(dayLabel(ms)).toBe("20261231");
    expect(monthLabel(ms)).toBe("202612");
    expect(labelOf("daily", ms + 1)).toBe("20270101");
    expect(labelOf("monthly", ms + 1)).toBe("202701");
    expect(labelOf("weekly", ms + 1)).toBe("2026-W53");
  });
});

describe("parseDay", () => {
  it("accepts real YYYY-MM-DD dates only", () => {
    expect(parseDay("2024-02-29")).toBe(Date.UTC(2024, 1, 29));
    for (const bad of ["2025-02-29", "2026-13-01", "2026-1-01", "20260101", "2026-01-01T00:00:00Z", "", "yesterday"]) {
      expect(parseDay(bad)).toBeUndefined();
    }
  });
});

describe("bucket ranges", () => {
  it("daily: every day of the range, across a year boundary", () => {
    expect(bucketLabels("daily", day("2026-12-30"), day("2027-01-02"))).toEqual(["20261230", "20261231", "20270101", "20270102"]);
    expect(bucketCount("daily", day("2026-12-30"), day("2027-01-02"))).toBe(4);
    expect(bucketLabels("daily", day("2026-03-01"), day("2026-03-01"))).toEqual(["20260301"]);
  });

  it("weekly: every week the range touches, from the week of `from` to the week of `to`", () => {
    expect(bucketLabels("weekly", day("2026-12-31"), day("2027-01-04"))).toEqual(["2026-W53", "2027-W01"]);
    expect(bucketLabels("weekly", day("2026-12-20"), day("2027-01-10"))).toEqual(["2026-W51", "2026-W52", "2026-W53", "2027-W01"]);
    expect(bucketLabels("weekly", day("2024-12-25"), day("2025-01-01"))).toEqual(["2024-W52", "2025-W01"]);
    expect(bucketCount("weekly", day("2026-12-20"), day("2027-01-10"))).toBe(4);
    // Both days in one week: one bucket.
    expect(bucketLabels("weekly", day("2027-01-01"), day("2027-01-03"))).toEqual(["2026-W53"]);
  });

  it("monthly: every month the range touches", () => {
    expect(bucketLabels("monthly", day("2026-11-15"), day("2027-02-01"))).toEqual(["202611", "202612", "202701", "202702"]);
    expect(bucketCount("monthly", day("2026-11-15"), day("2027-02-01"))).toBe(4);
    // From the 31st: months without a 31st are not skipped.
    expect(bucketLabels("monthly", day("2026-01-31"), day("2026-04-01"))).toEqual(["202601", "202602", "202603", "202604"]);
  });

  it("counts agree with the labels (the 400-bucket cap is computed before labels are built)", () => {
    const from = day("2026-01-01");
    expect(bucketCount("daily", from, day("2027-02-04"))).toBe(400);
    expect(bucketCount("daily", from, day("2027-02-05"))).toBe(401);
    for (const period of ["daily", "weekly", "monthly"] as const) {
      const to = day("2027-03-17");
      expect(bucketLabels(period, from, to)).toHaveLength(bucketCount(period, from, to));
    }
  });
});
