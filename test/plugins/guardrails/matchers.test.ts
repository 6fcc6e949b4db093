/**
 * What the matching kinds find in a text and mask (the `pii` entities and `regex` patterns):
 * matches in order and never overlapping, the first entity (or pattern) to claim a span keeping
 * it; e-mail addresses as the expression in plugins/guardrails/pii.ts reads them, adjacent ones
 * included; card numbers Luhn-checked whatever separates their digits.
 */
import { describe, expect, it } from "vitest";
import { masked, piiMatcher, regexMatcher } from "../../../plugins/guardrails/matchers.ts";
import { ibanValid, luhnValid } from "../../../plugins/guardrails/pii.ts";

const maskedBy = (matcher: ReturnType<typeof piiMatcher>, text: string) => masked(text, matcher.find(text));

describe("pii matcher", () => {
  const all = piiMatcher(["email", "phone", "credit_card", "iban", "ip_address", "us_ssn", "secret"]);

  it("masks every entity of a text, in place, the text between left as it is", () => {
    const text = "Mail ann.lee@example.com or call +1 415 555 0134; card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00, " +
      "host 192.168.0.1, SSN 123-45-6789, key sk-abcdefghijklmnopqrstuvwx.";
    expect(maskedBy(all, text)).toBe(
      "Mail [EMAIL] or call [PHONE]; card [CREDIT_CARD], IBAN [IBAN], host [IP_ADDRESS], SSN [US_SSN], key [SECRET].",
    );
  });

  it("gives the span to the entity looked for first: a card number is not also a phone number", () => {
    const found = all.find("4111-1111-1111-1111 and 415 555 0134");
    expect(found.map((m) => m.replacement)).toEqual(["[CREDIT_CARD]", "[PHONE]"]);
    expect(found.map((m) => [m.start, m.end])).toEqual([[0, 19], [24, 36]]);
  });

  it("returns the matches in the order of the text, whichever entity found them", () => {
    const text = "call 415 555 0134, then bob@example.org, then 415 555 0199 and eve@example.net";
    expect(all.find(text).map((m) => text.slice(m.start, m.end))).toEqual(["415 555 0134", "bob@example.org", "415 555 0199", "eve@example.net"]);
  });

  it("finds e-mail addresses from the start of their local part, next to each other and at the ends of the text", () => {
    const email = piiMatcher(["email"]);
    expect(maskedBy(email, "a@b.co")).toBe("[EMAIL]");
    expect(maskedBy(email, "(first.last+tag@mail.example.com)")).toBe("([EMAIL])");
    // The domain ends at the `_`, which may start the next address's local part.
    expect(maskedBy(email, "a@b.co_x@c.com")).toBe("[EMAIL][EMAIL]");
    expect(maskedBy(email, "x@y.z @example.com user@ user@host @@ a@b.c0m")).toBe("x@y.z @example.com user@ user@host @@ a@b.c0m");
  });

  it("leaves digit runs whose checksum fails", () => {
    expect(maskedBy(all, "order 4111 1111 1111 1112")).toBe("order 4111 1111 1111 1112");
    expect(maskedBy(all, "ref DE89 3704 0044 0532 0130 01")).toBe("ref DE89 3704 0044 0532 0130 01");
  });
});

describe("credit_card", () => {
  it("finds what the plain expression \\d(?:[ -]?\\d){12,18} finds, Luhn-checked, in random runs of digits and separators", () => {
    // pii.ts writes the expression with its first digits spelled out, for speed: the matches must not change.
    const plain = /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g;
    const cards = piiMatcher(["credit_card"]);
    const alphabet = "01234567890123456789  --a.";
    let seed = 46;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let found = 0;
    for (let i = 0; i < 20_000; i++) {
      let text = "";
      const length = 5 + Math.floor(random() * 60);
      while (text.length < length) text += alphabet[Math.floor(random() * alphabet.length)];
      const expected = [...text.matchAll(plain)].filter((m) => luhnValid(m[0])).map((m) => [m.index, m.index + m[0].length]);
      expect(cards.find(text).map((m) => [m.start, m.end]), text).toEqual(expected);
      found += expected.length;
    }
    expect(found).toBeGreaterThan(500);
  });
});

describe("Luhn check", () => {
  it("counts the digits only, 13 to 19 of them", () => {
    expect(luhnValid("4111111111111111")).toBe(true);
    expect(luhnValid("4111 1111-1111 1111")).toBe(true);
    expect(luhnValid("4111111111111112")).toBe(false);
    expect(luhnValid("4222222222222")).toBe(true);
    expect(luhnValid("000000000000")).toBe(false);
    expect(luhnValid("00000000000000000000")).toBe(false);
  });
});

describe("regex matcher", () => {
  it("masks each pattern's matches, the first pattern keeping a span both find", () => {
    const matcher = regexMatcher(["TICKET-[0-9]{4,}", "[0-9]{5}"], "[X]");
    expect(maskedBy(matcher, "TICKET-20931 and 12345")).toBe("[X] and [X]");
    expect(matcher.find("TICKET-20931").length).toBe(1);
  });

  it("steps over empty matches", () => {
    expect(maskedBy(regexMatcher(["b*"], "[B]"), "abba")).toBe("a[B]a");
  });
});

/** Random texts of `pieces`, seeded: a failing case can be run again. */
function randomTexts(pieces: readonly string[], count: number, seed: number): string[] {
  let state = seed;
  const random = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: count }, () => {
    let text = "";
    const length = 1 + Math.floor(random() * 14);
    for (let i = 0; i < length; i++) text += pieces[Math.floor(random() * pieces.length)];
    return text;
  });
}

const spans = (pattern: RegExp, text: string) => [...text.matchAll(pattern)].filter((m) => m[0] !== "").map((m) => [m.index, m.index + m[0].length]);

/** The matcher finds what `plain` (the expression it stands for) finds in random texts of `pieces`, some of them at least `minimum` times. */
function expectSameMatches(matcher: ReturnType<typeof piiMatcher>, plain: RegExp, pieces: readonly string[], count: number, minimum: number): void {
  let found = 0;
  for (const text of randomTexts(pieces, count, 46)) {
    const expected = spans(plain, text);
    expect(matcher.find(text).map((m) => [m.start, m.end]), text).toEqual(expected);
    found += expected.length;
  }
  expect(found).toBeGreaterThan(minimum);
}

describe("iban", () => {
  it("finds what its expression finds, checksum-checked where each value lies in the text, in random texts of IBANs and their pieces", () => {
    const plain = /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b/g;
    const pieces = ["DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "DE89", "3704", "0044", "GB", "82", "A", " ", "-", "x", "0"];
    const ibans = piiMatcher(["iban"]);
    let found = 0;
    for (const text of randomTexts(pieces, 20_000, 46)) {
      const expected = [...text.matchAll(plain)].filter((m) => ibanValid(m[0])).map((m) => [m.index, m.index + m[0].length]);
      expect(ibans.find(text).map((m) => [m.start, m.end]), text).toEqual(expected);
      found += expected.length;
    }
    expect(found).toBeGreaterThan(300);
  });
});

describe("secret", () => {
  it("finds what the one expression of its four shapes finds, in random texts of their pieces", () => {
    // pii.ts looks for each shape from a rare text in it, for speed: the matches must not change.
    const plain =
      /-----BEGIN [A-Z ]{0,20}PRIVATE KEY-----[\s\S]{0,8000}?-----END [A-Z ]{0,20}PRIVATE KEY-----|\bsk-[A-Za-z0-9_-]{20,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{36,}\b/g;
    const pieces = [
      "sk-",
      "AKIA",
      "ghp_",
      "gho_",
      "ghx_",
      "-----BEGIN ",
      "RSA ",
      "PRIVATE KEY-----",
      "-----END ",
      "ABCDEFGH",
      "abcdefghij0123456789",
      " ",
      "x",
      "_",
      "-",
      "\n",
    ];
    expectSameMatches(piiMatcher(["secret"]), plain, pieces, 20_000, 300);
  });
});

describe("ip_address", () => {
  it("finds what the one expression of IPv4 and IPv6 finds, in random texts of their pieces", () => {
    // pii.ts looks for an IPv6 address from its colons, for speed: the matches must not change.
    const octet = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
    const plain = new RegExp(`(?<![\\w.])${octet}(?:\\.${octet}){3}(?![\\w.])|(?<![\\w:])[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}(?![\\w:])`, "g");
    // Addresses and near misses (a group too long, a group short or over, a neighbour that joins them), and separators.
    const pieces = [
      "fe80:0:0:0:0:0:0:1",
      "2001:db8:0:0:0:ff00:42:8329",
      "ABCD:1:2:3:4:5:6:7",
      "12345:1:2:3:4:5:6:7",
      "1:2:3:4:5:6:7",
      "1:2:3:4:5:6:7:8:9",
      "192.168.0.1",
      "10.0.0.256",
      "1.2.3",
      "1.2.3.4.5",
      "fe80",
      "255",
      ":",
      ".",
      " ",
      "x",
      "_",
    ];
    expectSameMatches(piiMatcher(["ip_address"]), plain, pieces, 30_000, 300);
  });
});
