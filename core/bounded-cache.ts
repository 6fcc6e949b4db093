/**
 * Caches of values built from names that callers choose (consumers, models, label values) are
 * bounded, and once full they keep what they hold: a value for a name not among them is built
 * for the call and not kept. Starting over instead (clearing the map), with more names in use
 * than the bound, turns the whole cache, by then in V8's old generation, into garbage at every
 * clear and promotes every rebuilt entry again; a value built for one call dies young, which
 * costs little (docs/design.md#bounded-caches).
 */
export function keepIfRoom<K, V>(cache: Map<K, V>, key: K, value: V, max: number): V {
  if (cache.size < max) cache.set(key, value);
  return value;
}
