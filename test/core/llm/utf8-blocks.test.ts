/** Small texts encoded into shared blocks: the bytes `TextEncoder` gives, never written over by the texts encoded after them. */
import { describe, expect, it } from "vitest";
import { utf8 } from "../../../core/llm/utf8-blocks.ts";

describe("utf8", () => {
  it("gives TextEncoder's bytes, multi-byte characters and texts past the shared size included", () => {
    const encoder = new TextEncoder();
    for (const text of ["", "data: {}\n\n", "héllo wörld ✓ 😀", "x".repeat(5000), "é".repeat(3000)]) {
      expect(utf8(text)).toEqual(encoder.encode(text));
    }
  });

  it("keeps every text's bytes as they were while later texts fill and replace the block", () => {
    const texts = Array.from({ length: 2000 }, (_, i) => `data: {"n":${i},"t":"${"é".repeat(i % 40)}"}\n\n`);
    const kept = texts.map(utf8);
    const decoder = new TextDecoder();
    expect(kept.map((bytes) => decoder.decode(bytes))).toEqual(texts);
  });
});
