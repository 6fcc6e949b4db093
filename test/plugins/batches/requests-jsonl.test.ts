/**
 * A Message Batches create body becomes JSONL as it streams: each element of the top-level
 * `requests` array on its own line whatever the chunking, pretty-printed bodies included, with
 * strings (commas, brackets, escaped newlines in them) untouched and other top-level keys skipped.
 */
import { expect, it } from "vitest";
import { requestsAsJsonl } from "../../../plugins/batches/messages/requests-jsonl.ts";
async function conv(text: string, pieces = 3) {
  const bytes = new TextEncoder().encode(text);
  const size = Math.ceil(bytes.length / pieces);
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.slice(i, i + size));
      c.close();
    },
  });
  const shape = { found: false };
  const out = await new Response(requestsAsJsonl(stream, shape)).text();
  return { out, shape };
}
it("puts each request on a line of its own, however the body is cut", async () => {
  const body = {
    other: "requests",
    requests: [{ custom_id: 'a,]"x', params: { model: "m", messages: [{ role: "user", content: "hi\nthere [x]" }] } }, { custom_id: "b", params: {} }],
    tail: [1, 2],
  };
  for (const text of [JSON.stringify(body), JSON.stringify(body, null, 2)]) {
    for (const pieces of [1, 3, 17, 400]) {
      const { out, shape } = await conv(text, pieces);
      expect(shape.found).toBe(true);
      const lines = out.split("\n").filter((l) => l !== "");
      expect(lines.map((l) => JSON.parse(l))).toEqual(body.requests);
    }
  }
  expect((await conv('{"requests": []}')).out).toBe("");
  expect((await conv('{"nope": [1]}')).shape.found).toBe(false);
});
