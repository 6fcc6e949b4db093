/**
 * A changed body written again (core/llm/json-text.ts): always `JSON.stringify`'s text, whether
 * its long strings went in as they are or through the serializer; the objects as they were after.
 */
import { describe, expect, it } from "vitest";
import { changedBodyJson, changedBodyPieces, needsNoEscape, noteDerivedText } from "../../../core/llm/json-text.ts";
import type { JsonObject } from "../../../core/llm/json.ts";
import { parseJsonBytes } from "../../../core/request-body/json-body.ts";

/** A seeded generator, so a failing case can be run again. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

const PIECES = ["word ", "e-mail ann@example.com ", "ünïcödé ", "😀 ", "tab\tand newline\n", 'a "quote" ', "back\\slash ", "\u0001", "\ud83d"];

function text(next: () => number, length: number): string {
  let out = "";
  while (out.length < length) out += PIECES[Math.floor(next() * PIECES.length)];
  return out;
}

/** The client's body as the gateway has it: parsed from its bytes, with its `escapeFree`. */
function parsed(json: string): { value: JsonObject; escapeFree: boolean } {
  const result = parseJsonBytes(new TextEncoder().encode(json));
  if (!result.ok) throw new Error(result.message);
  return { value: result.json.value as JsonObject, escapeFree: result.json.escapeFree };
}

/** A masking hook's way of changing message `index`'s content: a copy on the way, the text masked and noted. */
function masked(body: JsonObject, index: number, mask: string, note: boolean): JsonObject {
  const messages = [...(body.messages as JsonObject[])];
  const message = { ...messages[index] };
  const from = message.content as string;
  const content = from.replace(/ann@example\.com/g, mask);
  message.content = content;
  if (note) noteDerivedText(message, "content", content, from);
  messages[index] = message;
  return { ...body, messages };
}

describe("changedBodyJson", () => {
  it("writes JSON.stringify's text for random bodies, texts of every kind, noted and not", () => {
    const next = random(46);
    for (let round = 0; round < 400; round++) {
      const plain = next() < 0.5;
      const texts = Array.from({ length: 1 + Math.floor(next() * 4) }, () => {
        const length = Math.floor(next() * 1200);
        return plain ? text(() => next() * 4 / PIECES.length, length) : text(next, length);
      });
      const client = JSON.stringify({ model: "m", messages: texts.map((content, i) => ({ role: i % 2 ? "assistant" : "user", content })), n: round });
      const original = parsed(client);
      const index = Math.floor(next() * texts.length);
      // A hook notes only masks that need no escape (its side of the contract).
      const mask = next() < 0.8 ? "[EMAIL]" : 'mask "with" quotes';
      const changed = masked(original.value, index, mask, needsNoEscape(mask) && next() < 0.9);
      const before = JSON.stringify(changed);
      expect(changedBodyJson(changed, original)).toBe(before);
      // What it says of backslashes is what the JSON holds (a later writer believes it).
      expect(changedBodyPieces(changed, original).escapeFree).toBe(!before.includes("\\"));
      // No placeholder left behind in the objects.
      expect(JSON.stringify(changed)).toBe(before);
    }
  });

  it("puts long texts in as they are when the client's JSON held no escape, the noted masked one too", () => {
    const prompt = "Reach ann@example.com about the refund. ".repeat(60);
    const system = "You are a support agent. ".repeat(20);
    const original = parsed(JSON.stringify({ model: "m", messages: [{ role: "system", content: system }, { role: "user", content: prompt }] }));
    expect(original.escapeFree).toBe(true);
    const changed = masked(original.value, 1, "[EMAIL]", true);
    expect(changedBodyJson(changed, original)).toBe(JSON.stringify(changed));
    // Told (wrongly) that the JSON was escape-free, the writer believes it: its strings go in unread, which shows they were not serialized.
    const lying = { ...parsed(JSON.stringify({ messages: [{ content: `${'say "hi" '.repeat(40)}` }] })), escapeFree: true };
    expect(changedBodyJson({ ...lying.value }, lying)).toContain('say "hi" say');
  });

  it("does not believe a note whose text was changed after it, or that was written from another text", () => {
    const original = parsed(JSON.stringify({ messages: [{ content: "plain text, nothing to escape. ".repeat(20) }] }));
    const changed = masked(original.value, 0, "[EMAIL]", true);
    const message = (changed.messages as JsonObject[])[0];
    message.content = `${message.content as string} then "quoted" by a later hook`;
    expect(changedBodyJson(changed, original)).toBe(JSON.stringify(changed));

    const from = 'another "quoted" text. '.repeat(20);
    const copy = { content: `${from}!` };
    noteDerivedText(copy, "content", copy.content, from);
    const other = { ...original.value, messages: [copy] };
    expect(changedBodyJson(other, original)).toBe(JSON.stringify(other));
  });

  it("writes a body whose objects are frozen, and one holding the placeholder itself, as JSON.stringify does; fails on a cyclic one as it does", () => {
    const original = parsed(JSON.stringify({ messages: [{ content: "x".repeat(400) }, { content: "y".repeat(400) }] }));
    const frozen = Object.freeze({ ...original.value, messages: Object.freeze((original.value.messages as JsonObject[]).map((m) => Object.freeze({ ...m }))) });
    expect(changedBodyJson(frozen, original)).toBe(JSON.stringify(frozen));
    const sneaky = { ...original.value, name: "\u0000gateway-verbatim-text-0", tail: '"\u0000gateway-verbatim-text-1' };
    expect(changedBodyJson(sneaky, original)).toBe(JSON.stringify(sneaky));
    // A hook's cyclic object fails as JSON.stringify fails on it, not by running out of stack.
    const cyclic: JsonObject = { ...original.value };
    cyclic.self = cyclic;
    expect(() => changedBodyJson(cyclic, original)).toThrow(/circular/);
  });
});

describe("needsNoEscape and escapeFree", () => {
  it("tells the strings JSON writes as they are", () => {
    expect(["[EMAIL]", "ünïcödé 😀", "a/b"].map(needsNoEscape)).toEqual([true, true, true]);
    expect(['"', "\\", "\n", "\u0000", "\ud83d", "x\udc00", "\ude00\ud83d"].map(needsNoEscape)).toEqual([false, false, false, false, false, false, false]);
  });

  it("marks a parsed body escape-free only when its JSON holds no backslash", () => {
    expect(parsed('{"a":"b","c":["ü😀"]}').escapeFree).toBe(true);
    expect(parsed('{"a":"line\\nbreak"}').escapeFree).toBe(false);
    expect(parsed('{"a":"\\u0041"}').escapeFree).toBe(false);
  });
});
