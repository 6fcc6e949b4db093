/**
 * Caches of values built from names that callers choose (consumers, models, label values) are
 * bounded, and once full they keep what they hold: a value for a name not among them is built
 * for the call and not kept. Starting over instead (clearing the map) looked equally simple,
 * but with more names in use than the bound every clear turned the whole cache, by then in V8's
 * old generation, into garbage and every rebuilt entry was promoted again: with 100,000
 * consumers drawn at random that churn cost more than the lookups it saved
 * (docs/design.md#bounded-caches). A value built for one call dies young, which costs little.
 */
export function keepIfRoom<K, V>(cache: Map<K, V>, key: K, value: V, max: number): V {
  if (cache.size < max) cache.set(key, value);
  return value;
}
