/**
 * The OpenAI Batches API of the batch plugin, in-process on the memory store and on Redis,
 * against the fake chat-completions and embeddings backend: a batch runs every line through
 * the LLM path as its owner and its output file has one line per request; lines of several
 * models run in one batch; bad input files fail the batch with line numbers and nothing sent.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { type BatchRuntime, batchRuntime, chatLine, createBatch, drive, fileForm, fileLines, ownRedis, STORES } from "./harness.ts";

const redisUrl = ownRedis();
let backend: FakeBackend;
beforeAll(async () => {
  backend = await startLlmBackend();
});
afterAll(async () => {
  await backend.stop();
});

const config = () => `
server:
  consumer_header: X-Consumer
batches:
  enabled: true
  max_lines: 5
services:
  - type: chat
    model: chat-small
    provider: chat_completions
    inference_url: ${backend.url}
    operations:
      chat: [/v1/chat/completions]
  - type: chat
    model: chat-large
    provider: chat_completions
    inference_url: ${backend.url}
    operations:
      chat: [/v1/chat/completions]
  - type: embed
    model: embed-small
    provider: chat_completions
    inference_url: ${backend.url}
    operations:
      embeddings: [/v1/embeddings]
`;

const alice = { "x-consumer": "alice" };

describe.each(STORES)("batches on the %s store", (store) => {
  let gw: BatchRuntime;
  afterEach(async () => {
    await gw?.close();
    backend.received.length = 0;
  });
  const start = async () => {
    gw = await batchRuntime(config(), { store, redisUrl });
    return gw;
  };
  const batch = (id: string) => gw.json(`/v1/batches/${id}`, { headers: alice });
  const statusIs = (id: string, status: string) => async () => (await batch(id)).body.status === status;

  it("runs every line as the owner and writes one output line per request", async () => {
    await start();
    const lines = [chatLine("r1", "one"), chatLine("r2", "two", "chat-large"), chatLine("r3", "three")];
    const created = await createBatch(gw, lines, { headers: alice });
    expect(created).toMatchObject({
      object: "batch",
      endpoint: "/v1/chat/completions",
      status: "validating",
      request_counts: { total: 0, completed: 0, failed: 0 },
      output_file_id: null,
    });
    const id = created.id as string;
    await drive(gw, statusIs(id, "completed"));
    const done = (await batch(id)).body;
    expect(done).toMatchObject({ status: "completed", request_counts: { total: 3, completed: 3, failed: 0 }, error_file_id: null });
    expect(done.completed_at).toEqual(expect.any(Number));
    const output = await fileLines(gw, done.output_file_id as string, alice);
    expect(output.map((line) => line.custom_id).sort()).toEqual(["r1", "r2", "r3"]);
    for (const line of output) {
      expect(line).toMatchObject({
        id: expect.stringMatching(/^batch_req_/),
        response: { status_code: 200, body: { object: "chat.completion" } },
        error: null,
      });
    }
    const byId = Object.fromEntries(output.map((line) => [line.custom_id, line]));
    expect((byId.r2.response as { body: { choices: Array<{ message: { content: string } }>; model: string } }).body.choices[0].message.content).toBe(
      "echo: two",
    );
    expect(backend.calls("/v1/chat/completions").map((call) => (call.body as { model: string }).model).sort()).toEqual([
      "chat-large",
      "chat-small",
      "chat-small",
    ]);
    // The output file is the owner's.
    expect((await gw.json(`/v1/files/${done.output_file_id}`, { headers: { "x-consumer": "bob" } })).status).toBe(404);
    expect((await gw.json(`/v1/files/${done.output_file_id}`, { headers: alice })).body).toMatchObject({ purpose: "batch_output" });
  });

  it("runs embeddings batches", async () => {
    await start();
    const line = (id: string) => JSON.stringify({ custom_id: id, method: "POST", url: "/v1/embeddings", body: { model: "embed-small", input: `text ${id}` } });
    const id = (await createBatch(gw, [line("e1"), line("e2")], { headers: alice, endpoint: "/v1/embeddings" })).id as string;
    await drive(gw, statusIs(id, "completed"));
    const output = await fileLines(gw, (await batch(id)).body.output_file_id as string, alice);
    expect(output.map((l) => l.custom_id).sort()).toEqual(["e1", "e2"]);
    expect((output[0].response as { body: { object: string } }).body.object).toBe("list");
  });

  it("lists the caller's batches newest first, paging with after", async () => {
    await start();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createBatch(gw, [chatLine(`r${i}`, "x")], { headers: alice })).id as string);
    await createBatch(gw, [chatLine("b", "x")], { headers: { "x-consumer": "bob" } });
    const newest = [...ids].sort().reverse();
    const first = await gw.json("/v1/batches?limit=2", { headers: alice });
    expect(first.body).toMatchObject({ object: "list", has_more: true, first_id: newest[0], last_id: newest[1] });
    expect((first.body.data as Array<{ id: string }>).map((b) => b.id)).toEqual(newest.slice(0, 2));
    const second = await gw.json(`/v1/batches?limit=2&after=${newest[1]}`, { headers: alice });
    expect((second.body.data as Array<{ id: string }>).map((b) => b.id)).toEqual([newest[2]]);
    expect(second.body.has_more).toBe(false);
    expect((await gw.json(`/v1/batches/${ids[0]}`, { headers: { "x-consumer": "bob" } })).status).toBe(404);
    expect((await gw.json(`/v1/batches/${ids[0]}/cancel`, { method: "POST", headers: { "x-consumer": "bob" } })).status).toBe(404);
  });

  it("answers a repeated Idempotency-Key with the batch it created", async () => {
    await start();
    const upload = await gw.json("/v1/files", { method: "POST", body: fileForm(chatLine("a", "x") + "\n"), headers: alice });
    const create = () =>
      gw.request("/v1/batches", {
        method: "POST",
        headers: { ...alice, "content-type": "application/json", "idempotency-key": "k1" },
        body: JSON.stringify({ input_file_id: upload.body.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { run: "1" } }),
      });
    const first = await create();
    const firstBody = (await first.json()) as Record<string, unknown>;
    expect(first.headers.get("x-idempotent-replay")).toBeNull();
    const again = await create();
    expect(again.status).toBe(200);
    expect(again.headers.get("x-idempotent-replay")).toBe("true");
    expect(((await again.json()) as Record<string, unknown>).id).toBe(firstBody.id);
    expect(firstBody.metadata).toEqual({ run: "1" });
    expect(((await gw.json("/v1/batches", { headers: alice })).body.data as unknown[]).length).toBe(1);
  });
});
