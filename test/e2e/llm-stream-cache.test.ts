/**
 * Streamed answers in the response cache (`llm.cache_streams`), as a user meets them: a
 * gateway process (Node, or Deno when the suite runs on Deno) in front of the fake LLM
 * backends, on the embedded store and on the suite's redis-server (database 20, flushed when
 * the file starts). A complete stream is stored as the client got it and replayed as a
 * stream (same SSE framing, `X-Cache: HIT`) without calling the backend; a stream that did
 * not end complete is never stored; a streamed answer never answers a non-streamed request.
 * Both chat-completions streams: one passed through from a chat_completions backend, one
 * translated from a Messages backend.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { flushRedisDb, kvStoreYaml } from "../support/stores-yaml.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";

const DB = 20;

let llm: FakeBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  await flushRedisDb(DB);
  llm = await startLlmBackend();
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((gw) => gw.kill()));
  await llm.stop();
});

function config(stores: string): string {
  return `
${stores}
llm:
  cache_streams: true
services:
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: ${llm.url}
    response_cache_ttl: 300
    operations: { chat: [/v1/chat/completions] }
  - type: assistant
    model: claude
    provider: messages_api
    inference_url: ${llm.url}
    response_cache_ttl: 300
    operations: { chat: [/v1/chat/completions] }
`;
}

interface Reply {
  status: number;
  cache: string | null;
  contentType: string;
  body: string;
}

const BACKEND_PATH = { gpt: "/v1/chat/completions", claude: "/v1/messages" } as const;

describe.each(["memory", "redis"] as const)("streamed answers in the response cache on the %s store", (store) => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config(kvStoreYaml(store, DB)));
    running.push(gw);
  });

  async function ask(model: "gpt" | "claude", text: string, stream = true): Promise<Reply> {
    const response = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, max_tokens: 50, messages: [{ role: "user", content: `${store}: ${text}` }], ...(stream ? { stream } : {}) }),
    });
    return {
      status: response.status,
      cache: response.headers.get("x-cache"),
      contentType: response.headers.get("content-type") ?? "",
      body: await response.text(),
    };
  }

  /** The backend calls so far for this model's protocol. */
  const calls = (model: "gpt" | "claude") => llm.calls(BACKEND_PATH[model]).length;

  /** Asks until the answer comes from the cache (the fill lands after the first stream ended). */
  async function untilHit(model: "gpt" | "claude", text: string): Promise<Reply> {
    let reply: Reply | undefined;
    await waitUntil(
      async () => (reply = await ask(model, text)).cache === "HIT",
      10_000,
      () => `"${text}" never served from the cache: ${JSON.stringify(reply)}`,
    );
    return reply as Reply;
  }

  for (const model of ["gpt", "claude"] as const) {
    it(`${model}: a complete stream is replayed as the same stream with X-Cache: HIT, without calling the backend`, async () => {
      const first = await ask(model, "tell me a story");
      expect(first.status).toBe(200);
      expect(first.cache).toBe("MISS");
      expect(first.body).toContain("chat.completion.chunk");
      expect(first.body.trimEnd().endsWith("data: [DONE]")).toBe(true);

      await untilHit(model, "tell me a story");
      const before = calls(model);
      const replay = await ask(model, "tell me a story");
      expect(replay).toEqual({ status: 200, cache: "HIT", contentType: first.contentType, body: first.body });
      expect(replay.contentType).toContain("text/event-stream");
      expect(calls(model)).toBe(before);
    });
  }

  it("a stream that ended without its end is not stored: the next identical stream goes to the backend", async () => {
    const cut = await ask("gpt", "[cut] half an answer");
    expect(cut.body).toContain('"error"');
    // A later complete stream's fill landing means the cut one's would have landed before it.
    await ask("gpt", "a complete one");
    await untilHit("gpt", "a complete one");
    const before = calls("gpt");
    const again = await ask("gpt", "[cut] half an answer");
    expect(again.cache).toBe("MISS");
    expect(calls("gpt")).toBe(before + 1);
  });

  it("a streamed answer in the cache never answers a non-streamed request", async () => {
    await ask("gpt", "stream first");
    await untilHit("gpt", "stream first");
    const before = calls("gpt");
    const whole = await ask("gpt", "stream first", false);
    expect(whole.status).toBe(200);
    expect(whole.cache).toBe("MISS");
    expect(whole.contentType).toContain("application/json");
    expect(JSON.parse(whole.body)).toMatchObject({ object: "chat.completion" });
    expect(calls("gpt")).toBe(before + 1);
  });
});
