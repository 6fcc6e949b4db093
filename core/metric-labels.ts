/**
 * Prepared label sets for hot metrics. prom-client hashes the label object (sorting its
 * keys) on every `inc`/`observe`, ~3 µs a call; the child for a label set, found again by the
 * joined values, skips that. Children stay valid: series are never reset on these metrics.
 */

type Labels = Record<string, string>;

/** Above this many label sets the cache starts over (label values can come from headers). */
const MAX_CHILDREN = 10_000;

export function labeledChildren<C>(child: (labels: Labels) => C): (labels: Labels) => C {
  const children = new Map<string, C>();
  return (labels) => {
    let key = "";
    for (const name in labels) key += `${labels[name]}\u0000`;
    let found = children.get(key);
    if (found === undefined) {
      if (children.size >= MAX_CHILDREN) children.clear();
      found = child(labels);
      children.set(key, found);
    }
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
