/**
 * A batch's input is checked before anything is sent: a file that is not JSONL, a line without
 * custom_id, a duplicate custom_id, a url that is not the endpoint, an unknown model, a model
 * hidden from the owner (visibility), a line longer than the body limit, more than
 * batches.max_lines lines: each ends the batch `failed` with the bad lines' numbers in `errors`,
 * and the backend receives nothing. An unknown or another consumer's input_file_id is a 4xx at
 * creation; so are a bad endpoint, completion_window and metadata.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { type BatchRuntime, batchRuntime, chatLine, createBatch, drive, fileForm, ownRedis, STORES } from "./harness.ts";

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
  user_type_header: X-User-Type
  max_body_mb: 0.001
batches:
  enabled: true
  max_lines: 3
services:
  - type: chat
    model: chat-small
    provider: chat_completions
    inference_url: ${backend.url}
    operations:
      chat: [/v1/chat/completions]
  - type: chat
    model: staff-only
    provider: chat_completions
    inference_url: ${backend.url}
    visibility:
      user_types: [staff]
    operations:
      chat: [/v1/chat/completions]
`;

const alice = { "x-consumer": "alice" };

describe.each(STORES)("batch input checks on the %s store", (store) => {
  let gw: BatchRuntime;
  afterEach(async () => {
    await gw?.close();
    backend.received.length = 0;
  });

  /** Runs a batch of `lines` (as `headers`) to its end; its final object. */
  async function failedBatch(lines: readonly string[], headers: Record<string, string> = alice): Promise<Record<string, unknown>> {
    const id = (await createBatch(gw, lines, { headers })).id as string;
    const get = () => gw.json(`/v1/batches/${id}`, { headers });
    await drive(gw, async () => (await get()).body.status !== "validating");
    return (await get()).body;
  }
  const errorsOf = (batch: Record<string, unknown>) =>
    (batch.errors as { object: string; data: Array<{ code: string; line: number | null; message: string }> }).data;

  it("fails a batch with bad lines, naming each line, and sends nothing", async () => {
    gw = await batchRuntime(config(), { store, redisUrl });
    const lines = [
      chatLine("a", "fine"),
      "not json",
      JSON.stringify({ method: "POST", url: "/v1/chat/completions", body: { model: "chat-small" } }),
      chatLine("a", "again"),
      JSON.stringify({ custom_id: "u", method: "POST", url: "/v1/embeddings", body: { model: "chat-small" } }),
      chatLine("m", "x", "no-such-model"),
      chatLine("h", "x", "staff-only"),
    ];
    // Up to max_lines (3) requests are counted before the file is found too long: max_lines is raised here.
    const batch = await failedBatch(lines.slice(0, 3));
    expect(batch).toMatchObject({ status: "failed", request_counts: { total: 0, completed: 0, failed: 0 }, output_file_id: null, error_file_id: null });
    expect(batch.failed_at).toEqual(expect.any(Number));
    expect(errorsOf(batch)).toEqual([
      { code: "invalid_json_line", line: 2, message: expect.stringContaining("not valid JSON") },
      { code: "missing_custom_id", line: 3, message: expect.stringContaining("custom_id") },
    ]);
    const more = await failedBatch(lines.slice(3, 6));
    expect(errorsOf(more)).toEqual([{
      code: "invalid_url",
      line: 2,
      message: expect.stringContaining('"/v1/embeddings" is not the batch\'s endpoint "/v1/chat/completions"'),
    }, { code: "model_not_found", line: 3, message: expect.stringContaining('"no-such-model"') }]);
    expect(backend.received).toEqual([]);
  });

  it("fails duplicate custom_ids, a hidden model (as unknown) and a line past the body limit", async () => {
    gw = await batchRuntime(config(), { store, redisUrl });
    const hidden = await failedBatch([chatLine("a", "x"), chatLine("a", "y"), chatLine("h", "x", "staff-only")]);
    expect(errorsOf(hidden)).toEqual([
      { code: "duplicate_custom_id", line: 2, message: expect.stringContaining('custom_id "a"') },
      { code: "model_not_found", line: 3, message: expect.stringContaining('model "staff-only" does not exist or is not available to you') },
    ]);
    const long = await failedBatch([chatLine("l", "x".repeat(2000))]);
    expect(errorsOf(long)).toEqual([{ code: "line_too_large", line: 1, message: expect.stringContaining("server.max_body_mb") }]);
    // The audience of a hidden model may use it.
    const staff = { ...alice, "x-user-type": "staff" };
    const allowed = await failedBatch([chatLine("h", "x", "staff-only")], staff);
    expect(allowed.status).not.toBe("failed");
    expect(backend.received.length).toBeLessThanOrEqual(1);
  });

  it("fails a file of more than batches.max_lines requests, and an empty one", async () => {
    gw = await batchRuntime(config(), { store, redisUrl });
    const tooMany = await failedBatch(["a", "b", "c", "d"].map((id) => chatLine(id, "x")));
    expect(errorsOf(tooMany)).toEqual([{ code: "too_many_lines", line: 4, message: expect.stringContaining("batches.max_lines") }]);
    const empty = await failedBatch(["", "  "]);
    expect(errorsOf(empty)).toEqual([{ code: "empty_file", line: null, message: expect.stringContaining("no request") }]);
    expect(backend.received).toEqual([]);
  });

  it("refuses at creation an unknown or foreign input file, a bad endpoint, window or metadata", async () => {
    gw = await batchRuntime(config(), { store, redisUrl });
    const upload = await gw.json("/v1/files", { method: "POST", body: fileForm(chatLine("a", "x") + "\n"), headers: alice });
    const create = (body: Record<string, unknown>, headers: Record<string, string> = alice) =>
      gw.json("/v1/batches", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ input_file_id: upload.body.id, endpoint: "/v1/chat/completions", completion_window: "24h", ...body }),
      });
    const foreign = await create({}, { "x-consumer": "bob" });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: { message: expect.stringContaining("input_file_id"), type: "not_found_error", code: "not_found" } });
    expect((await create({ input_file_id: "file-nope" })).status).toBe(404);
    const endpoint = await create({ endpoint: "/v1/images" });
    expect(endpoint.status).toBe(400);
    expect((endpoint.body.error as { message: string }).message).toContain('"/v1/chat/completions", "/v1/embeddings"');
    const window = await create({ completion_window: "1h" });
    expect(window.status).toBe(400);
    expect((window.body.error as { message: string }).message).toContain('"24h"');
    expect((await create({ metadata: { n: 1 } })).status).toBe(400);
    expect((await gw.json("/v1/batches", { headers: alice })).body.data).toEqual([]);
  });
});
