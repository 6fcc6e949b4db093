/**
 * Canonical JSON: object keys sorted (by UTF-16 code units, like JSON.stringify sees them), no
 * whitespace. Two bodies that differ only in key order or formatting give the same text, so
 * they share a cache key. Built in one string as it walks (it runs on every cached request).
 */

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
    // Array.prototype.sort without a comparator orders by UTF-16 code units.
    const keys = Object.keys(record).sort();
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
