/**
 * Prepared label sets for hot metrics. prom-client hashes the label object (sorting its
 * keys) on every `inc`/`observe`, ~3 µs a call; the child for a label set, found again by the
 * joined values, skips that. A prepared series (`counterChildren`, `histogramChildren`) finds
 * its series again by prom-client's own key each time, so a reset metric is counted afresh.
 */

import { keepIfRoom } from "./bounded-cache.ts";

type Labels = Record<string, string>;

/** Above this many label sets the cache keeps what it holds (label values can come from headers; docs/design.md#bounded-caches). */
const MAX_CHILDREN = 10_000;

export function labeledChildren<C>(child: (labels: Labels) => C): (labels: Labels) => C {
  const children = new Map<string, C>();
  return (labels) => {
    let key = "";
    for (const name in labels) key += `${labels[name]}\u0000`;
    let found = children.get(key);
    if (found === undefined) found = keepIfRoom(children, key, child(labels), MAX_CHILDREN);
    return found;
  };
}

/** A counter's series for one label set, ready to count. */
export interface CounterChild {
  inc(value?: number): void;
}

/** The parts of a prom-client (15.x) counter a prepared series writes to. */
interface CounterInternals {
  inc(labels: Labels, value?: number): { labelHash?: string } | void;
  hashMap?: Record<string, { value: number } | undefined>;
}

/**
 * Prepared series of a counter. prom-client's own `labels(...)` child still validates and
 * hashes its label object on every `inc` (~1-2 µs and a few allocations); this one finds its
 * series by the hash prom-client returned for the first increment and adds to it. Read from the
 * counter each time, so a reset counter (a new hash map) is counted through `inc` again; any
 * other shape (another prom-client version) falls back to `inc`.
 */
export function counterChildren(counter: { inc(labels: Labels, value?: number): void }): (labels: Labels) => CounterChild {
  const internals = counter as unknown as CounterInternals;
  return labeledChildren((labels) => {
    let hash: string | undefined;
    return {
      inc(value = 1) {
        const series = hash === undefined ? undefined : internals.hashMap?.[hash];
        if (series === undefined || !(value >= 0) || !Number.isFinite(value)) {
          const result = internals.inc(labels, value);
          if (result && typeof result.labelHash === "string") hash = result.labelHash;
          return;
        }
        series.value += value;
      },
    };
  });
}

/** A histogram's series for one label set, ready to observe. */
export interface HistogramChild {
  observe(value: number): void;
}

/** One series of a prom-client (15.x) histogram: buckets hold the observations up to their bound (not cumulative). */
interface HistogramSeries {
  labels: Labels;
  sum: number;
  count: number;
  bucketValues: Record<number, number>;
}

/** The parts of a prom-client histogram a prepared series writes to. */
interface HistogramInternals {
  observe(labels: Labels, value: number): void;
  hashMap?: Record<string, HistogramSeries | undefined>;
  upperBounds?: readonly number[];
}

const sameLabels = (series: HistogramSeries | undefined, labels: Labels, names: readonly string[]) =>
  series !== undefined && Object.keys(series.labels).length === names.length && names.every((name) => series.labels[name] === labels[name]);

/**
 * The key of `labels`' series in `map` (the same values for the same names), found once: by
 * the key prom-client 15 gives it (its label names sorted, `name:value,` each), else by a walk
 * over every series, which with a series per model (1,000 models) made each new one cost as
 * many comparisons as there were series.
 */
function seriesKey(map: Record<string, HistogramSeries | undefined> | undefined, labels: Labels): string | undefined {
  const names = Object.keys(labels);
  let likely = "";
  for (const name of [...names].sort()) if (labels[name] !== undefined) likely += `${name}:${labels[name]},`;
  if (map && Object.hasOwn(map, likely) && sameLabels(map[likely], labels, names)) return likely;
  for (const key in map) {
    if (sameLabels(map[key], labels, names)) return key;
  }
  return undefined;
}

/**
 * Prepared series of a histogram, as `counterChildren` for counters: prom-client's own child
 * validates, copies and hashes its label object on every `observe` (the time-to-first-token
 * observation was ~1 % of a stream's CPU). The first observation goes through prom-client and
 * the series it made is found by its labels; later ones add to it as prom-client's `observe`
 * does. A reset or removed series, a value that is not a finite number, or another shape
 * (another prom-client version) goes through `observe` again.
 */
export function histogramChildren(histogram: { observe(labels: Labels, value: number): void }): (labels: Labels) => HistogramChild {
  const internals = histogram as unknown as HistogramInternals;
  return labeledChildren((labels) => {
    let key: string | undefined;
    return {
      observe(value) {
        const series = key === undefined ? undefined : internals.hashMap?.[key];
        const bounds = internals.upperBounds;
        if (series === undefined || bounds === undefined || !Number.isFinite(value)) {
          internals.observe(labels, value);
          key = seriesKey(internals.hashMap, labels);
          return;
        }
        series.sum += value;
        series.count += 1;
        for (const bound of bounds) {
          if (value <= bound) {
            if (Object.hasOwn(series.bucketValues, bound)) series.bucketValues[bound] += 1;
            break;
          }
        }
      },
    };
  });
}
