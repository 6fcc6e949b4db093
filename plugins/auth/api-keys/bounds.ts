/**
 * How big the fields of an API key may be, and which characters its consumer and user type
 * may hold. A key is read on every request it authenticates, so its record stays small; and
 * backends get the consumer and user type in a header (`server.consumer_header`,
 * `server.user_type_header`), which carries only printable ASCII and Latin-1: a name with CR,
 * LF, NUL or a character above U+00FF would make every request with the key fail at the
 * backend call (502), so it is refused when the key is written instead.
 */

export const KEY_BOUNDS = {
  /** `consumer`, `user_type`, and each entry of `groups`, `roles`, `scopes` and `models`. */
  nameChars: 256,
  /** Entries in each of `groups`, `roles`, `scopes` and `models`. */
  listEntries: 100,
  /** `metadata`: pairs, and the characters of each name and each value (OpenAI's metadata bounds). */
  metadataPairs: 16,
  metadataNameChars: 64,
  metadataValueChars: 512,
} as const;

/** The first character a header value cannot carry as a name's: controls (tab included) and anything above U+00FF. */
const NOT_HEADER_TEXT = /[^\x20-\x7e\xa0-\xff]/;

const codePoint = (char: string) => `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;

/** What is wrong with `value` as a name that travels in a header; undefined when nothing is. */
export function headerNameProblem(field: string, value: string): string | undefined {
  if (value.length > KEY_BOUNDS.nameChars) return `${field}: at most ${KEY_BOUNDS.nameChars} characters (got ${value.length})`;
  const bad = NOT_HEADER_TEXT.exec(value);
  if (!bad) return undefined;
  return (
    `${field}: ${codePoint(bad[0])} at character ${bad.index + 1} cannot be sent to backends in a header; ` +
    "use printable ASCII or Latin-1 characters only (no control characters such as CR, LF, NUL or tab, none above U+00FF)"
  );
}

/** What is wrong with the length of a list field or of one of its entries; undefined when nothing is. */
export function listProblem(field: string, entries: readonly string[]): string | undefined {
  if (entries.length > KEY_BOUNDS.listEntries) return `${field}: at most ${KEY_BOUNDS.listEntries} entries (got ${entries.length})`;
  const long = entries.findIndex((entry) => entry.length > KEY_BOUNDS.nameChars);
  if (long >= 0) return `${field}[${long}]: at most ${KEY_BOUNDS.nameChars} characters (got ${entries[long].length})`;
  return undefined;
}

/** What is wrong with the size of `metadata` (an object of strings); undefined when nothing is. */
export function metadataProblem(metadata: Readonly<Record<string, string>>): string | undefined {
  const pairs = Object.entries(metadata);
  const { metadataPairs, metadataNameChars, metadataValueChars } = KEY_BOUNDS;
  if (pairs.length > metadataPairs) return `metadata: at most ${metadataPairs} pairs (got ${pairs.length})`;
  for (const [name, value] of pairs) {
    if (name.length > metadataNameChars) return `metadata: names of at most ${metadataNameChars} characters (got one of ${name.length})`;
    if (value.length > metadataValueChars) return `metadata.${name}: at most ${metadataValueChars} characters (got ${value.length})`;
  }
  return undefined;
}
