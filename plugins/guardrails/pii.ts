/**
 * The `pii` kind's entities: each a regular expression (checked by regex-safety.ts's rule, none
 * nests a repetition) and, where the value has one, its checksum, so a run of digits that only
 * looks like a card number or an IBAN is left alone. Card numbers are Luhn-checked, IBANs
 * ISO 13616 (mod 97) checked. E-mail addresses are looked for from their `@` (emailFinder).
 */
import { anchoredFinder, type Finder, firstOf, regexFinder } from "./finder.ts";

export const PII_ENTITIES = ["email", "phone", "credit_card", "iban", "ip_address", "us_ssn", "secret"] as const;

export type PiiEntity = (typeof PII_ENTITIES)[number];

interface EntityMatcher {
  find: Finder;
  mask: string;
  /** The longest text a match can be (Infinity: unbounded), which bounds what a stream holds back for it. */
  maxLength: number;
  /** Whether the checksum of the value from `start` to `end` of `text` holds (absent: every match counts). */
  valid?(text: string, start: number, end: number): boolean;
}

/** The Luhn checksum of the digits in `value` (13 to 19 of them: card numbers). */
export const luhnValid = (value: string): boolean => luhnValidIn(value, 0, value.length);

/** The Luhn checksum of the digits `text` holds from `start` to `end` (read in place: no copy per card). */
function luhnValidIn(text: string, start: number, end: number): boolean {
  let sum = 0;
  let count = 0;
  // From the last digit: every second one doubled. Separators are not digits and do not count.
  for (let i = end - 1; i >= start; i--) {
    let digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) continue;
    if (count % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    count++;
  }
  return count >= 13 && count <= 19 && sum % 10 === 0;
}

/** The IBAN checksum: the country and check digits moved to the end, letters as numbers, mod 97 is 1. */
export function ibanValid(value: string): boolean {
  const iban = value.replace(/ /g, "").toUpperCase();
  if (iban.length < 15 || iban.length > 34) return false;
  const moved = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of moved) {
    const code = char.charCodeAt(0);
    const number = code >= 65 && code <= 90 ? String(code - 55) : char;
    for (const digit of number) remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";

/** `[A-Za-z0-9._%+-]`, the characters of an address's local part, by character code. */
const LOCAL_PART = new Uint8Array(128);
for (const char of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-") LOCAL_PART[char.charCodeAt(0)] = 1;
const isLocalPart = (code: number) => code < 128 && LOCAL_PART[code] === 1;

const DOMAIN = /[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/y;

/**
 * What `/[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g` finds from `from`,
 * found from each `@` instead: the expression tries every start in a run of local-part
 * characters and reads the run to its end from each (quadratic in a word's length, and most
 * of a prose text is such runs). A match is the run before an `@` (from `from` at the
 * earliest) and a domain after it.
 */
const emailFinder: Finder = (text, from, found) => {
  for (let at = text.indexOf("@", from); at !== -1; at = text.indexOf("@", at + 1)) {
    let start = at;
    while (start > from && isLocalPart(text.charCodeAt(start - 1))) start--;
    if (start === at) continue;
    DOMAIN.lastIndex = at + 1;
    if (DOMAIN.test(text)) {
      found.start = start;
      found.end = DOMAIN.lastIndex;
      return true;
    }
  }
  return false;
};

/**
 * The secret shapes, each found from a text that is rare in prose (a key's `-` or `_`): as one
 * expression of four alternatives (`-----BEGIN ...|\bsk-...|\bAKIA...|\bgh[pousr]_...`) they
 * made V8 try every position of a text, 0.8 µs of 2 KB, and `indexOf("sk-")` alone took longer
 * (an `s` every few characters). They start with different characters, so no two match at one
 * place.
 */
const SECRET_SHAPES = [
  { anchor: "-----BEGIN ", offset: 0, shape: /-----BEGIN [A-Z ]{0,20}PRIVATE KEY-----[\s\S]{0,8000}?-----END [A-Z ]{0,20}PRIVATE KEY-----/y },
  { anchor: "-", offset: 2, shape: /\bsk-[A-Za-z0-9_-]{20,}/y },
  { anchor: "AKIA", offset: 0, shape: /\bAKIA[0-9A-Z]{16}\b/y },
  { anchor: "_", offset: 3, shape: /\bgh[pousr]_[A-Za-z0-9]{36,}\b/y },
];

const IPV4 = new RegExp(`(?<![\\w.])${OCTET}(?:\\.${OCTET}){3}(?![\\w.])`, "g");
const IPV6 = /(?<![\w:])[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}(?![\w:])/y;
const isHexDigit = (code: number) => (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);

/**
 * An IPv6 address (eight groups) looked for from each `:`, its first group the hex digits just
 * before the first colon. As an expression alone it tried every letter a-f of a text, 8 µs of
 * 2 KB of prose; colons are rare in prose.
 */
const ipv6Finder: Finder = (text, from, found) => {
  for (let colon = text.indexOf(":", from + 1); colon !== -1; colon = text.indexOf(":", colon + 1)) {
    let start = colon;
    while (start > from && colon - start < 4 && isHexDigit(text.charCodeAt(start - 1))) start--;
    if (start === colon) continue;
    IPV6.lastIndex = start;
    if (IPV6.test(text)) {
      found.start = start;
      found.end = IPV6.lastIndex;
      return true;
    }
  }
  return false;
};

const ENTITIES: Record<PiiEntity, EntityMatcher> = {
  // An address is at most 254 characters (RFC 5321's path limit).
  email: { find: emailFinder, mask: "[EMAIL]", maxLength: 254 },
  // `\d(?:[ -]?\d){12,18}` with its first eight digits written out: the same matches, found
  // four times faster in prose (V8 skips ahead through text only past a fixed-length start).
  credit_card: {
    find: regexFinder(/(?<![\d-])\d[ -]?\d[ -]?\d[ -]?\d[ -]?\d[ -]?\d[ -]?\d[ -]?\d(?:[ -]?\d){5,11}(?![\d-])/g),
    mask: "[CREDIT_CARD]",
    valid: luhnValidIn,
    maxLength: 37,
  },
  iban: {
    find: regexFinder(/\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b/g),
    mask: "[IBAN]",
    valid: (text, start, end) => ibanValid(text.slice(start, end)),
    maxLength: 64,
  },
  us_ssn: { find: regexFinder(/(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])/g), mask: "[US_SSN]", maxLength: 11 },
  phone: { find: regexFinder(/(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)|\d{3})[ .-]?\d{3}[ .-]?\d{4}(?!\w)/g), mask: "[PHONE]", maxLength: 19 },
  ip_address: {
    // An IPv4 address starts with a digit and a dot follows its first group; an IPv6 one has a colon there: never both at one place.
    find: firstOf(regexFinder(IPV4), ipv6Finder),
    mask: "[IP_ADDRESS]",
    maxLength: 39,
  },
  secret: {
    find: anchoredFinder(SECRET_SHAPES),
    mask: "[SECRET]",
    maxLength: Number.POSITIVE_INFINITY,
  },
};

/**
 * The order entities are looked for: longer shapes first (a card number holds what looks like a
 * phone number; a secret may hold anything), so the first that matches a span masks it whole.
 */
const ORDER: readonly PiiEntity[] = ["secret", "email", "iban", "credit_card", "us_ssn", "phone", "ip_address"];

export function entityMatchers(entities: readonly string[]): EntityMatcher[] {
  return ORDER.filter((entity) => entities.includes(entity)).map((entity) => ENTITIES[entity]);
}
