/**
 * The `pii` kind's entities: each a regular expression (checked by regex-safety.ts's rule, none
 * nests a repetition) and, where the value has one, its checksum, so a run of digits that only
 * looks like a card number or an IBAN is left alone. Card numbers are Luhn-checked, IBANs
 * ISO 13616 (mod 97) checked.
 */

export const PII_ENTITIES = ["email", "phone", "credit_card", "iban", "ip_address", "us_ssn", "secret"] as const;

export type PiiEntity = (typeof PII_ENTITIES)[number];

interface EntityMatcher {
  pattern: RegExp;
  mask: string;
  /** The longest text a match can be (Infinity: unbounded), which bounds what a stream holds back for it. */
  maxLength: number;
  /** The value's checksum holds (absent: every match counts). */
  valid?(value: string): boolean;
}

/** The Luhn checksum of the digits in `value` (13 to 19 of them: card numbers). */
export function luhnValid(value: string): boolean {
  const digits = value.replace(/\D/g, "");
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
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

const ENTITIES: Record<PiiEntity, EntityMatcher> = {
  // An address is at most 254 characters (RFC 5321's path limit).
  email: { pattern: /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g, mask: "[EMAIL]", maxLength: 254 },
  credit_card: { pattern: /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g, mask: "[CREDIT_CARD]", valid: luhnValid, maxLength: 37 },
  iban: { pattern: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b/g, mask: "[IBAN]", valid: ibanValid, maxLength: 64 },
  us_ssn: { pattern: /(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])/g, mask: "[US_SSN]", maxLength: 11 },
  phone: { pattern: /(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)|\d{3})[ .-]?\d{3}[ .-]?\d{4}(?!\w)/g, mask: "[PHONE]", maxLength: 19 },
  ip_address: {
    pattern: new RegExp(`(?<![\\w.])${OCTET}(?:\\.${OCTET}){3}(?![\\w.])|(?<![\\w:])[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}(?![\\w:])`, "g"),
    mask: "[IP_ADDRESS]",
    maxLength: 39,
  },
  secret: {
    pattern:
      /-----BEGIN [A-Z ]{0,20}PRIVATE KEY-----[\s\S]{0,8000}?-----END [A-Z ]{0,20}PRIVATE KEY-----|\bsk-[A-Za-z0-9_-]{20,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{36,}\b/g,
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
