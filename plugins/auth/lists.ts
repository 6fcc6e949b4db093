/** Identity values that arrive as one string (a header, a claim) and mean a list. */

/** `"a, b,,c"` -> `["a", "b", "c"]`: comma-separated, trimmed, empties and repeats dropped. */
export function commaList(text: string | null | undefined): string[] {
  if (!text) return [];
  return [...new Set(text.split(",").map((part) => part.trim()).filter((part) => part !== ""))];
}

/**
 * Scopes: space-separated in OAuth 2 (RFC 6749 3.3); commas are accepted too, since a
 * scope token can contain neither, and proxies often join header values with commas.
 */
export function scopeList(text: string | null | undefined): string[] {
  if (!text) return [];
  return [...new Set(text.split(/[\s,]+/).filter((part) => part !== ""))];
}
