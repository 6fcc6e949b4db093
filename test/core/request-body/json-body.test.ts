/**
 * The shared JSON body reader: byte bound (413) with and without content-length, empty,
 * BOM, nesting depth, syntax and a top-level key twice (400), each with the message a client sees.
 */
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../core/errors.ts";
import { parseJsonBytes, readJsonBody } from "../../../core/request-body/json-body.ts";
import { ownKeyCount, repeatedKey } from "../../../core/request-body/json-keys.ts";
import { MAX_JSON_DEPTH } from "../../../core/request-body/json-depth.ts";
import type { BodyLimit } from "../../../core/request-body/read-bytes.ts";

const KIB = 1024;
const limit: BodyLimit = { maxBytes: 64 * KIB, name: "the test limit", remedy: "send less" };
const encoder = new TextEncoder();

function request(body: BodyInit | null, headers: Record<string, string> = {}): Request {
  return new Request("http://gateway.test/-/x", { method: "POST", body, headers, duplex: "half" } as RequestInit);
}

/** A chunked body (no content-length) of `chunks` chunks of 16 KiB, counting what was pulled. */
function chunkedBody(chunks: number, first = "") {
  const state = { pulled: 0, cancelled: false };
  const chunk = encoder.encode(" ".repeat(16 * KIB));
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === 0 && first !== "") controller.enqueue(encoder.encode(first));
      if (sent >= chunks) return controller.close();
      sent++;
      state.pulled += chunk.byteLength;
      controller.enqueue(chunk.slice());
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

async function refusal(promise: Promise<unknown>): Promise<{ status: number; type: string; message: string }> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(error)}`);
  return { status: error.status, type: error.type, message: error.message };
}

const nested = (depth: number, open: string, close: string, inner = "1") => open.repeat(depth) + inner + close.repeat(depth);
const nestedObject = (depth: number) => '{"a":'.repeat(depth - 1) + "{}" + "}".repeat(depth - 1);

describe("readJsonBody", () => {
  it("parses a body and hands back the bytes it parsed", async () => {
    const json = await readJsonBody(request('{"model":"m"}'), { limit });
    expect(json.value).toEqual({ model: "m" });
    expect(new TextDecoder().decode(json.bytes)).toBe('{"model":"m"}');
  });

  it("refuses a body over the bound with 413, with or without content-length", async () => {
    const over = `{"pad":"${"x".repeat(limit.maxBytes)}"}`;
    const declared = await refusal(readJsonBody(request(over), { limit }));
    expect(declared).toEqual({
      status: 413,
      type: "request_too_large",
      message: "the JSON body is larger than the test limit (0.063 MiB = 65536 bytes); send less",
    });

    const { stream } = chunkedBody(8, '{"pad":"');
    const chunked = await refusal(readJsonBody(request(stream), { limit }));
    expect(chunked).toEqual(declared);
  });

  it("accepts a body of exactly the bound", async () => {
    const frame = '{"pad":""}';
    const atBound = `{"pad":"${"x".repeat(limit.maxBytes - frame.length)}"}`;
    expect(atBound.length).toBe(limit.maxBytes);
    expect((await readJsonBody(request(atBound), { limit })).bytes.byteLength).toBe(limit.maxBytes);
  });

  it("stops reading an endless chunked body: it drains a bounded amount, then cancels it", async () => {
    const { stream, state } = chunkedBody(Number.POSITIVE_INFINITY, '{"pad":"');
    expect((await refusal(readJsonBody(request(stream), { limit }))).status).toBe(413);
    // The drain after the 413 (so a client can read it) is bounded too.
    const deadline = Date.now() + 10_000;
    while (!state.cancelled && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(state.cancelled).toBe(true);
    expect(state.pulled).toBeLessThan(limit.maxBytes + 17 * 1024 * KIB);
  });

  it("refuses an empty body with 400 saying JSON is expected", async () => {
    expect(await refusal(readJsonBody(request(""), { limit, expected: 'a JSON body {"model": "<model alias>"}' }))).toEqual({
      status: 400,
      type: "invalid_request_error",
      message: 'the request body is empty; send a JSON body {"model": "<model alias>"}',
    });
    expect((await refusal(readJsonBody(request(null), { limit }))).message).toBe("the request body is empty; send a JSON body");
  });

  it("drops a leading byte order mark from what it parsed and from the bytes", async () => {
    const json = await readJsonBody(request(new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('{"a":1}')])), { limit });
    expect(json.value).toEqual({ a: 1 });
    expect([...json.bytes]).toEqual([...encoder.encode('{"a":1}')]);
    // A BOM and nothing else is an empty body; a second BOM is not JSON.
    expect((await refusal(readJsonBody(request(new Uint8Array([0xef, 0xbb, 0xbf])), { limit }))).message).toContain("empty");
    const twice = new Uint8Array([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, ...encoder.encode("{}")]);
    expect((await refusal(readJsonBody(request(twice), { limit }))).message).toContain("not valid JSON");
  });

  it(`accepts ${MAX_JSON_DEPTH} levels of nesting and refuses one more with 400 naming the limit`, async () => {
    const big: BodyLimit = { ...limit, maxBytes: 1024 * KIB };
    expect((await readJsonBody(request(nested(MAX_JSON_DEPTH, "[", "]")), { limit })).value).toBeDefined();
    expect((await readJsonBody(request(nestedObject(MAX_JSON_DEPTH)), { limit })).value).toBeDefined();
    for (const body of [nested(MAX_JSON_DEPTH + 1, "[", "]"), nestedObject(MAX_JSON_DEPTH + 1), nested(100_000, "[", "]"), nestedObject(100_000)]) {
      expect(await refusal(readJsonBody(request(body), { limit: big }))).toEqual({
        status: 400,
        type: "invalid_request_error",
        message: "the JSON body nests arrays and objects more than 128 levels deep, the limit; send a flatter body",
      });
    }
  });

  it("accepts many shallow arrays and objects side by side", async () => {
    const text = JSON.stringify({ messages: Array.from({ length: 400 }, (_, i) => ({ role: "user", content: [{ type: "text", text: String(i) }] })) });
    expect((await readJsonBody(request(text), { limit })).value).toEqual(JSON.parse(text));
  });

  it("does not count brackets inside strings, escaped quotes included", async () => {
    const text = JSON.stringify({ s: "[".repeat(500), t: '\\"{{{{' + "{".repeat(500), u: "\\" });
    expect((await readJsonBody(request(text), { limit })).value).toEqual(JSON.parse(text));
  });

  it("refuses a key twice at the top level with 400 naming it, however it is spelled", async () => {
    const refused = (field: string) => ({
      status: 400,
      type: "invalid_request_error",
      message: `the JSON body has the field ${JSON.stringify(field)} more than once; send each field once`,
    });
    const cases: Array<[string, string]> = [
      ['{"model":"a","model":"b"}', "model"],
      ['{"model":"a","messages":[],"stream":false,"stream":true}', "stream"],
      [' {\n  "model" : "a",\n  "mod\\u0065l" : "b"\n}', "model"],
      ['{"__proto__":{},"x":1,"__proto__":[]}', "__proto__"],
      ['{"a\\"b":1,"a\\u0022b":2}', 'a"b'],
      ['{"x":{"y":[{"z":"}"}]},"x":"]"}', "x"],
    ];
    for (const [text, field] of cases) expect(await refusal(readJsonBody(request(text), { limit })), text).toEqual(refused(field));
  });

  it("accepts equal keys in nested objects, key-like strings and many distinct keys", async () => {
    const texts = [
      '{"messages":[{"role":"user","role":"system"}],"meta":{"a":1,"a":2}}',
      '{"a":"\\",\\"a\\":1","b":"{\\"a\\":2}","c":["a","a"]}',
      JSON.stringify(Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, { [`k${i}`]: [i] }]))),
      '{"model":"a"}',
      "{}",
      '[{"a":1,"a":2}]',
    ];
    for (const text of texts) expect((await readJsonBody(request(text), { limit })).value, text).toEqual(JSON.parse(text));
  });

  it("counts the keys spelled at every depth, a repeated one each time, so a nested repeat shows and is named", () => {
    const cases: Array<[string, string | undefined]> = [
      ['{"messages":[{"role":"user","content":"a","content":"b"}]}', "content"],
      ['{"meta":{"a":1,"a":2}}', "a"],
      ['{"x":[{"a":1},{"a":2}],"y":{"b":{"c":1,"c":{"d":2}}}}', "c"],
      ['{"a":"\\",\\"a\\":1","b":"{\\"a\\":2}","c":["a","a"]}', undefined],
      ['{"x":[{"a":1},{"a":2}],"y":{"a":3}}', undefined],
    ];
    for (const [text, repeated] of cases) {
      const parsed = parseJsonBytes(encoder.encode(text));
      if (!parsed.ok) throw new Error(parsed.message);
      expect(parsed.json.keys! > ownKeyCount(parsed.json.value), text).toBe(repeated !== undefined);
      expect(repeatedKey(text, parsed.json.value), text).toBe(repeated);
    }
  });

  it("refuses invalid JSON and non-UTF-8 with 400 saying what is wrong", async () => {
    expect((await refusal(readJsonBody(request('{"a":1,}'), { limit }))).message).toBe(
      'the request body is not valid JSON: expected a property name in double quotes, found "}" at line 1, column 8 (character 7)',
    );
    expect((await refusal(readJsonBody(request(new Uint8Array([0x7b, 0xff, 0x7d])), { limit }))).message).toBe(
      "the request body is not valid UTF-8; send JSON encoded as UTF-8",
    );
  });
});
