/**
 * Canonical JSON: object keys sorted (by UTF-16 code units, like JSON.stringify sees them), no
 * whitespace. Two bodies that differ only in key order or formatting give the same text, so
 * they share a cache key. Built in one string as it walks (it runs on every cached request).
 */

/**
 * Sorts keys in place by UTF-16 code units, as `Array.prototype.sort` does without a
 * comparator. V8's sort allocates ~1.5 KB of work space per call, whatever the length, and a
 * body sorts one list per object (every message): an insertion sort of the usual few keys
 * allocates nothing. Long lists still go to `sort`, which stays O(n log n).
 */
function sortKeys(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i];
    let j = i - 1;
    for (; j >= 0 && keys[j] > key; j--) keys[j + 1] = keys[j];
    keys[j + 1] = key;
  }
  return keys;
}

function write(value: unknown, out: string): string {
  if (typeof value === "string") return out + JSON.stringify(value);
  if (Array.isArray(value)) {
    out += "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      const item: unknown = value[i];
      out = write(item === undefined ? null : item, out);
    }
    return `${out}]`;
  }
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const keys = sortKeys(Object.keys(record));
    out += "{";
    let first = true;
    for (const key of keys) {
      const item = record[key];
      if (item === undefined) continue;
      out += `${first ? "" : ","}${JSON.stringify(key)}:`;
      first = false;
      out = write(item, out);
    }
    return `${out}}`;
  }
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`${typeof value} has no JSON form`);
  return out + text;
}

export function canonicalJson(value: unknown): string {
  return write(value, "");
}
