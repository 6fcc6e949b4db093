import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../core/crypto/sha256.ts";

const reference = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describe("sha256Hex", () => {
  it("gives the standard digests", () => {
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("matches node:crypto at every length around the block and padding boundaries, in UTF-8", () => {
    for (let n = 0; n <= 200; n++) {
      for (const text of ["a".repeat(n), "é".repeat(n), "😀".repeat(n), `x${"\ud800".repeat(n)}`]) expect(sha256Hex(text)).toBe(reference(text));
    }
  });

  // The message buffer is shared between calls and grows: a long text, then short ones, must
  // not see each other's bytes.
  it("hashes long texts, and short ones after them, alike", () => {
    for (const text of ["b".repeat(5000), "short", "€".repeat(400_000), "c".repeat(2_000_000), "", "d".repeat(100)]) {
      expect(sha256Hex(text)).toBe(reference(text));
    }
  });
});
