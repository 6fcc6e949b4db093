/** Small texts encoded into shared blocks: the bytes `TextEncoder` gives, never written over by the texts encoded after them. */
import { describe, expect, it } from "vitest";
import { utf8, utf8Pieces } from "../../../core/llm/utf8-blocks.ts";

describe("utf8", () => {
  it("gives TextEncoder's bytes, multi-byte characters and texts past the shared size included", () => {
    const encoder = new TextEncoder();
    for (const text of ["", "data: {}\n\n", "héllo wörld ✓ 😀", "x".repeat(5000), "é".repeat(3000), "✓".repeat(4096), "😀".repeat(2048)]) {
      expect(utf8(text)).toEqual(encoder.encode(text));
    }
  });

  it("keeps every text's bytes as they were while later texts fill and replace the block", () => {
    const texts = Array.from({ length: 2000 }, (_, i) => `data: {"n":${i},"t":"${"é".repeat(i % 40)}"}\n\n`);
    const kept = texts.map(utf8);
    const decoder = new TextDecoder();
    expect(kept.map((bytes) => decoder.decode(bytes))).toEqual(texts);
  });

  it("puts bodies of a few KB in shared blocks, one whole even when its characters outgrow the room left", () => {
    const decoder = new TextDecoder();
    // 2 KB ASCII bodies, then ones whose multi-byte characters need up to 3 bytes a code unit.
    const texts = Array.from({ length: 60 }, (_, i) => (i % 3 === 2 ? "✓é".repeat(1000 + i) : `{"n":${i},"p":"${"x".repeat(2000 + 7 * i)}"}`));
    const kept = texts.map(utf8);
    expect(kept.map((bytes) => decoder.decode(bytes))).toEqual(texts);
    // Seven 2 KB bodies in a row share one block.
    const row = Array.from({ length: 7 }, () => utf8("y".repeat(2048)));
    expect(new Set(row.map((bytes) => bytes.buffer)).size).toBeLessThanOrEqual(2);
  });

  it("encodes pieces one after the other as the bytes of their concatenation, kept while later texts fill the blocks", () => {
    const encoder = new TextEncoder();
    const decoder = new TextDecoder();
    const cases = Array.from({ length: 300 }, (_, i) => {
      const text = i % 4 === 3 ? "✓é😀".repeat(50 + i * 3) : "x".repeat(200 + i * 9);
      return [`{"n":${i},"content":"`, text, '","tail":"ü"}'];
    });
    cases.push(["a", "b".repeat(5000), "c"], ["only one piece"], ["", "", ""]);
    const kept = cases.map((pieces) => utf8Pieces(pieces));
    cases.forEach((pieces, i) => expect(kept[i]).toEqual(encoder.encode(pieces.join(""))));
    expect(kept.map((bytes) => decoder.decode(bytes))).toEqual(cases.map((pieces) => pieces.join("")));
  });
});
