/**
 * `/v1/responses` as a batch endpoint: accepted where a service serves it, each line run
 * through the Responses protocol as its owner (the output lines hold Responses, which the
 * owner can then retrieve), and refused where no service serves it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { type BatchRuntime, batchRuntime, createBatch, drive, fileLines, ownRedis, STORES } from "./harness.ts";

const redisUrl = ownRedis();
let backend: FakeBackend;
beforeAll(async () => {
  backend = await startLlmBackend();
});
afterAll(async () => {
  await backend.stop();
});

const config = (responses: boolean) => `
server:
  consumer_header: X-Consumer
batches:
  enabled: true
services:
  - type: chat
    model: chat-small
    provider: chat_completions
    inference_url: ${backend.url}
    operations:
      chat: [/v1/chat/completions${responses ? ", /v1/responses" : ""}]
`;

const alice = { "x-consumer": "alice" };
const line = (id: string, input: string) => JSON.stringify({ custom_id: id, method: "POST", url: "/v1/responses", body: { model: "chat-small", input } });

describe.each(STORES)("Responses batches on the %s store", (store) => {
  let gw: BatchRuntime;
  afterEach(async () => {
    await gw?.close();
  });

  it("runs /v1/responses lines as the owner: Responses in the output, stored for the owner", async () => {
    gw = await batchRuntime(config(true), { store, redisUrl });
    const created = await createBatch(gw, [line("r1", "one"), line("r2", "two")], { headers: alice, endpoint: "/v1/responses" });
    expect(created).toMatchObject({ object: "batch", endpoint: "/v1/responses" });
    const id = created.id as string;
    await drive(gw, async () => (await gw.json(`/v1/batches/${id}`, { headers: alice })).body.status === "completed");
    const done = (await gw.json(`/v1/batches/${id}`, { headers: alice })).body;
    const output = await fileLines(gw, done.output_file_id as string, alice);
    const byId = Object.fromEntries(output.map((entry) => [entry.custom_id, entry.response as { status_code: number; body: Record<string, unknown> }]));
    expect(byId.r2).toMatchObject({
      status_code: 200,
      body: { object: "response", status: "completed", output: [{ type: "message", content: [{ text: "echo: two" }] }] },
    });
    const responseId = byId.r1.body.id as string;
    expect((await gw.json(`/v1/responses/${responseId}`, { headers: alice })).body).toMatchObject({ id: responseId, object: "response" });
    expect((await gw.json(`/v1/responses/${responseId}`, { headers: { "x-consumer": "bob" } })).status).toBe(404);
  });

  it("refuses /v1/responses as an endpoint where no service serves it", async () => {
    gw = await batchRuntime(config(false), { store, redisUrl });
    await expect(createBatch(gw, [line("r1", "one")], { headers: alice, endpoint: "/v1/responses" })).rejects.toThrow(/"status":400.*endpoint.*must be one of/);
  });
});
