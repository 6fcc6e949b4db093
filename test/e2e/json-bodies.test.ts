/**
 * JSON request bodies the gateway reads itself, as a client meets them: the admin endpoints'
 * byte bound (413, with and without content-length), the nesting bound (400) on the LLM
 * proxy, the direct proxy and an admin endpoint, a top-level field twice (400) on each of
 * them, and a body forwarded exactly as it was parsed (a leading BOM dropped; an empty JSON
 * body refused). The real gateway process in front of fake backends that record what they
 * received.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type FakeBackend as HttpBackend, startBackend } from "../fixtures/http-backend.ts";
import { type FakeBackend as LlmBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";

const MIB = 1024 * 1024;
const CHAT = "/v1/chat/completions";
const NESTING_MESSAGE = "the JSON body nests arrays and objects more than 128 levels deep, the limit; send a flatter body";

interface ErrorBody {
  error: { message: string; type: string };
}

let echo: HttpBackend;
let llm: LlmBackend;
let gw: GatewayProcess;

beforeAll(async () => {
  [echo, llm] = await Promise.all([startBackend({ kind: "echo" }), startLlmBackend()]);
  gw = await startGateway(`
server:
  max_body_mb: 4
services:
  - type: echo
    model: echo-model
    backend_model: echo-backend
    operations: { run: [/v1/echo] }
    inference_url: ${echo.url}
  - type: chat
    model: gpt-alias
    default: true
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [${CHAT}] }
  - type: chat
    model: gpt-rewritten
    provider: chat_completions
    backend_model: backend-gpt
    inference_url: ${llm.url}
    operations: { chat: [${CHAT}] }
`);
});
afterAll(async () => {
  await gw?.kill();
  await Promise.all([echo?.close(), llm?.stop()]);
});
beforeEach(() => {
  echo.reset();
  llm.received.length = 0;
});

function post(path: string, body: BodyInit, headers: Record<string, string> = { "content-type": "application/json" }): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: "POST", headers, body });
}

async function errorOf(response: Response, status: number): Promise<ErrorBody["error"]> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/json");
  return (JSON.parse(text) as ErrorBody).error;
}

/** A valid JSON body of `bytes` bytes or more, sent chunked (no content-length) in 64 KiB pieces. */
function chunkedJson(prefix: string, bytes: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const chunk = encoder.encode(" ".repeat(64 * 1024));
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === 0) controller.enqueue(encoder.encode(`${prefix}"pad":"`));
      if (sent >= bytes) {
        controller.enqueue(encoder.encode('"}'));
        return controller.close();
      }
      sent += chunk.byteLength;
      controller.enqueue(chunk.slice());
    },
  });
}

const deepArray = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const deepObject = (depth: number) => '{"a":'.repeat(depth - 1) + "{}" + "}".repeat(depth - 1);
const chat = (model: string, extra = "") => `{"model":"${model}","messages":[{"role":"user","content":"hi"}]${extra}}`;

describe("admin endpoints: a bounded body", () => {
  it("refuses a body over 1 MiB to /-/jobs/purge with 413 and the error body", async () => {
    const body = JSON.stringify({ model: "nothing-here", pad: "x".repeat(2 * MIB) });
    const error = await errorOf(await post("/-/jobs/purge", body), 413);
    expect(error).toEqual({
      type: "request_too_large",
      code: "payload_too_large",
      message: "the JSON body is larger than the admin endpoints' body limit (1 MiB = 1048576 bytes); send a smaller body",
    });
  });

  it("cuts off a chunked body (no content-length) the same way", async () => {
    const response = await fetch(`${gw.url}/-/jobs/purge`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chunkedJson('{"model":"nothing-here",', 2 * MIB),
      duplex: "half",
    } as RequestInit);
    expect((await errorOf(response, 413)).message).toContain("admin endpoints' body limit (1 MiB = 1048576 bytes)");
    // The gateway is still serving, and a body within the bound is read.
    const small = await post("/-/jobs/purge", JSON.stringify({ model: "nothing-here", pad: "x".repeat(MIB - 100) }));
    expect(small.status).toBe(200);
    expect(await small.json()).toEqual({ model: "nothing-here", deleted: 0 });
  });

  it("refuses an empty purge body with 400 saying what to send", async () => {
    const error = await errorOf(await post("/-/jobs/purge", ""), 400);
    expect(error).toEqual({
      type: "invalid_request_error",
      code: "invalid_request",
      message: 'the request body is empty; send a JSON body {"model": "<model alias>"}',
    });
  });
});

describe("nesting depth", () => {
  it("refuses 100,000 levels of nesting with 400 on the LLM proxy, the direct proxy and an admin endpoint", async () => {
    const cases: Array<[string, string]> = [
      [CHAT, deepArray(100_000)],
      [CHAT, deepObject(100_000)],
      [CHAT, chat("gpt-rewritten", `,"x":${deepArray(100_000)}`)],
      [CHAT, chat("gpt-rewritten", `,"x":${deepObject(100_000)}`)],
      ["/v1/echo", `{"model":"echo-model","x":${deepObject(100_000)}}`],
      ["/-/jobs/purge", deepArray(100_000)],
      ["/-/jobs/purge", `{"model":"nothing-here","x":${deepObject(100_000)}}`],
    ];
    const answers: Array<{ path: string; status: number; error: unknown }> = [];
    for (const [path, body] of cases) {
      const response = await post(path, body);
      answers.push({ path, status: response.status, error: ((await response.json()) as Partial<ErrorBody>).error });
    }
    expect(answers).toEqual(
      cases.map(([path]) => ({ path, status: 400, error: { type: "invalid_request_error", code: "invalid_request", message: NESTING_MESSAGE } })),
    );
    // The same sent as text/plain on an LLM path (read as JSON there) is refused too.
    const untyped = await post(CHAT, chat("gpt-rewritten", `,"x":${deepArray(100_000)}`), { "content-type": "text/plain" });
    expect((await errorOf(untyped, 400)).message).toBe(NESTING_MESSAGE);
    expect(llm.received).toHaveLength(0);
    expect(echo.requests).toHaveLength(0);
  });

  it("accepts a body nested 128 levels deep and refuses 129", async () => {
    // The outer object is one level: "x" holds the other 127 (then 128).
    const at = await post(CHAT, chat("gpt-rewritten", `,"x":${deepObject(127)}`));
    expect(at.status, await at.clone().text()).toBe(200);
    expect(llm.received).toHaveLength(1);
    expect(llm.received[0].body).toMatchObject({ model: "backend-gpt", x: JSON.parse(deepObject(127)) as unknown });
    const direct = await post("/v1/echo", `{"model":"echo-model","x":${deepArray(127)}}`);
    expect(direct.status).toBe(200);
    const purge = await post("/-/jobs/purge", `{"model":"nothing-here","x":${deepArray(127)}}`);
    expect(purge.status).toBe(200);

    expect((await errorOf(await post(CHAT, chat("gpt-rewritten", `,"x":${deepObject(128)}`)), 400)).message).toBe(NESTING_MESSAGE);
    expect(llm.received).toHaveLength(1);
  });
});

describe("a top-level field twice", () => {
  const message = (field: string) => `the JSON body has the field "${field}" more than once; send each field once`;

  it("is refused with 400 naming it on the LLM proxy, the direct proxy and an admin endpoint, before anything is forwarded", async () => {
    const cases: Array<[string, string, string]> = [
      [CHAT, '{"model":"gpt-alias","messages":[{"role":"user","content":"hi"}],"model":"gpt-rewritten"}', "model"],
      [CHAT, '{"model":"gpt-alias","stream":false,"messages":[],"stream":true}', "stream"],
      ["/v1/echo", '{"model":"echo-model","input":"a","input":"b"}', "input"],
      ["/-/jobs/purge", '{"model":"nothing-here","model":"echo-model"}', "model"],
    ];
    for (const [path, body, field] of cases) {
      expect(await errorOf(await post(path, body), 400), `${path} ${body}`).toEqual({
        type: "invalid_request_error",
        code: "invalid_request",
        message: message(field),
      });
    }
    expect(llm.received).toHaveLength(0);
    expect(echo.requests).toHaveLength(0);
  });

  it("is not a repeat when the key is in a nested object or inside a string", async () => {
    const body = '{"model":"echo-model","meta":{"model":"a","model":"b"},"note":"\\",\\"model\\":\\"x"}';
    expect((await post("/v1/echo", body)).status).toBe(200);
    expect(echo.requests).toHaveLength(1);
    // Forwarded with the backend model (so re-serialized: the nested repeat keeps its last value).
    expect(JSON.parse(echo.requests[0].body)).toEqual({ model: "echo-backend", meta: { model: "b" }, note: '","model":"x' });
  });
});

describe("the body forwarded is the body parsed", () => {
  const bom = (text: string) => new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)]);

  it("drops a leading BOM from what the direct proxy forwards", async () => {
    const text = '{"input":"hello"}';
    const response = await post("/v1/echo", bom(text));
    expect(response.status).toBe(200);
    expect(echo.requests).toHaveLength(1);
    expect(echo.requests[0].bytes).toBe(text.length);
    expect(echo.requests[0].body).toBe(text);
  });

  it("drops a leading BOM from what the LLM proxy forwards", async () => {
    const text = chat("gpt-alias");
    const response = await post(CHAT, bom(text));
    expect(response.status).toBe(200);
    expect(llm.received).toHaveLength(1);
    // The fake backend parses what it got: with a BOM left in it would have kept the raw text.
    expect(llm.received[0].body).toEqual(JSON.parse(text));
    expect(llm.received[0].headers["content-length"]).toBe(String(text.length));
  });

  it("refuses an empty body sent as JSON with 400 instead of serving the default model", async () => {
    for (const path of [CHAT, "/v1/echo"]) {
      const error = await errorOf(await post(path, ""), 400);
      expect(error).toEqual({
        type: "invalid_request_error",
        code: "invalid_request",
        message: "the request body is empty; send a JSON object (the content type says JSON)",
      });
    }
    expect(llm.received).toHaveLength(0);
    expect(echo.requests).toHaveLength(0);
  });

  it("still forwards a DELETE sent with a JSON content type and no body", async () => {
    const response = await fetch(`${gw.url}/v1/echo`, { method: "DELETE", headers: { "content-type": "application/json" } });
    expect(response.status).toBe(200);
    expect(echo.requests).toHaveLength(1);
    expect(echo.requests[0].bytes).toBe(0);
  });
});
