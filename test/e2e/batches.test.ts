/**
 * The batch APIs as their clients meet them: the official `openai` client with only its base
 * URL pointed at a real gateway process (Node, and Deno in the Deno subset), on the embedded
 * stores and on Redis with S3 (where a standalone relay process runs the lines, as deployed:
 * docs/batches.md#how-lines-run): upload a JSONL file, create a batch, retrieve it until
 * `completed`, read the output file (one line per input line, with its custom_id and answer),
 * against a chat-completions backend, a Messages-style backend behind translation and an
 * embeddings backend; cancel; list pages with `after`; a signed webhook when a batch ends. And
 * the official `@anthropic-ai/sdk`: `messages.batches.create`, `retrieve` until `ended`,
 * `results()` iterating every line, against a Messages-style backend (as is) and a chat one
 * (translated).
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI, { toFile } from "openai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { type RunningServer, startRedis } from "../support/servers.ts";
import { type ReceiverProcess, startReceiverProcess } from "../support/webhook-receiver-process.ts";
import { createHmac } from "node:crypto";

type Json = Record<string, unknown>;

const services = (url: string) => `
services:
  - { type: chat, model: chat-small, provider: chat_completions, inference_url: ${url}, operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: claude-like, provider: messages_api, inference_url: ${url}, operations: { chat: [/v1/chat/completions] } }
  - { type: embed, model: embed-small, provider: chat_completions, inference_url: ${url}, operations: { embeddings: [/v1/embeddings] } }
  - { type: chat, model: claude-native, provider: messages_api, inference_url: ${url}, operations: { messages: [/v1/messages] } }
  - { type: chat, model: claude-chat, provider: chat_completions, inference_url: ${url}, operations: { messages: [/v1/messages] } }
`;

const STORES = [
  { name: "the embedded stores", yaml: (dir: string) => `object_store:\n  dir: ${JSON.stringify(dir)}\n` },
  {
    name: "Redis and S3",
    yaml: (_dir: string, redis?: RunningServer) =>
      `redis:\n  addr: ${JSON.stringify(redis?.url)}\nobject_store:\n  endpoint: ${
        JSON.stringify(inject("s3Endpoint"))
      }\n  access_key: S3RVER\n  secret_key: S3RVER\n  bucket: gateway-test\n`,
  },
] as const;

describe.each(STORES)("batches through the openai client on $name", ({ name, yaml }) => {
  let backend: FakeBackend;
  let gw: GatewayProcess;
  let relay: GatewayProcess | undefined;
  let client: OpenAI;
  let redis: RunningServer | undefined;
  let receiver: ReceiverProcess;
  const dir = mkdtempSync(join(tmpdir(), "gw-batches-e2e-"));

  beforeAll(async () => {
    [backend, receiver] = await Promise.all([startLlmBackend(), startReceiverProcess()]);
    if (name === "Redis and S3") redis = await startRedis();
    const config = `
server:
  addr: ":{{PORT}}"
batches:
  enabled: true
webhooks:
  allow_private_networks: true
  signing_secret: batch-secret
${yaml(dir, redis)}${services(backend.url)}`;
    gw = await startGateway(config);
    // With Redis the relay is not embedded: a standalone one runs the lines.
    if (redis) relay = await startGateway(config, { role: "relay" });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([gw?.stop(), relay?.stop()]);
    await backend?.stop();
    await receiver?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const upload = async (lines: readonly Json[]) =>
    client.files.create({ file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join("\n") + "\n"), "input.jsonl"), purpose: "batch" });
  const until = async (id: string, status: string) => {
    let batch = await client.batches.retrieve(id);
    await waitUntil(
      async () => {
        batch = await client.batches.retrieve(id);
        return batch.status === status;
      },
      30_000,
      () => `batch ${id} is ${batch.status}, not ${status}: ${JSON.stringify(batch)}`,
    );
    return batch;
  };
  const contentLines = async (fileId: string) =>
    (await (await client.files.content(fileId)).text()).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Json);

  it("runs a chat batch over a chat-completions backend and a Messages-style one (translated)", async () => {
    const chat = (id: string, model: string) => ({
      custom_id: id,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model, max_tokens: 50, messages: [{ role: "user", content: `hello ${id}` }] },
    });
    const file = await upload([chat("c1", "chat-small"), chat("m1", "claude-like"), chat("c2", "chat-small")]);
    expect(file).toMatchObject({ object: "file", purpose: "batch", filename: "input.jsonl" });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      metadata: { run: "e2e" },
    });
    expect(created).toMatchObject({ object: "batch", status: "validating", metadata: { run: "e2e" } });
    const done = await until(created.id, "completed");
    expect(done.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    const output = await contentLines(done.output_file_id as string);
    expect(output.map((l) => l.custom_id).sort()).toEqual(["c1", "c2", "m1"]);
    const byId = Object.fromEntries(
      output.map((l) => [l.custom_id, l.response as { status_code: number; body: { object: string; choices: Array<{ message: { content: string } }> } }]),
    );
    expect(byId.c1).toMatchObject({ status_code: 200, body: { object: "chat.completion", choices: [{ message: { content: "echo: hello c1" } }] } });
    // The Messages-style backend got a Messages request; its answer came back as chat completions.
    expect(byId.m1).toMatchObject({ status_code: 200, body: { object: "chat.completion" } });
    expect(backend.calls("/v1/messages")).toHaveLength(1);
  });

  it("runs an embeddings batch", async () => {
    const line = (id: string) => ({ custom_id: id, method: "POST", url: "/v1/embeddings", body: { model: "embed-small", input: `text ${id}` } });
    const file = await upload([line("e1"), line("e2")]);
    const created = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h" });
    const done = await until(created.id, "completed");
    const output = await contentLines(done.output_file_id as string);
    expect(output.map((l) => l.custom_id).sort()).toEqual(["e1", "e2"]);
    expect((output[0].response as { body: { object: string } }).body.object).toBe("list");
  });

  it("cancels a batch and pages the list with after", async () => {
    const file = await upload([{
      custom_id: "x",
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "chat-small", messages: [{ role: "user", content: "x" }] },
    }]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
    }
    const cancelled = await client.batches.cancel(ids[2]);
    expect(["cancelling", "cancelled"]).toContain(cancelled.status);
    await until(ids[2], "cancelled");
    const first = await client.batches.list({ limit: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.hasNextPage()).toBe(true);
    const second = await first.getNextPage();
    const seen = [...first.data, ...second.data].map((b) => b.id);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of ids) expect(seen.indexOf(id) >= 0 || (await client.batches.list({ limit: 100 })).data.some((b) => b.id === id)).toBe(true);
    expect(seen.slice(0, 3)).toEqual([...ids].reverse());
  });

  it("notifies the callback_url, signed, when a batch ends, and lists it for operators", async () => {
    const file = await upload([{
      custom_id: "w",
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "chat-small", messages: [{ role: "user", content: "w" }] },
    }]);
    const params = {
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      callback_url: `${receiver.url}/hook`,
    } as unknown as OpenAI.BatchCreateParams;
    const created = await client.batches.create(params);
    await until(created.id, "completed");
    let deliveries: Awaited<ReturnType<ReceiverProcess["received"]>> = [];
    await waitUntil(async () => (deliveries = await receiver.received(created.id)).length > 0, 20_000);
    const [delivery] = deliveries;
    const body = JSON.parse(delivery.body) as Json;
    expect(body).toEqual({ id: expect.stringMatching(/^evt_/), type: "batch.completed", created_at: expect.any(Number), data: { id: created.id } });
    const [t, v1] = String(delivery.headers["x-svc-signature"]).split(",").map((part) => part.split("=")[1]);
    expect(v1).toBe(createHmac("sha256", "batch-secret").update(`${t}.${delivery.body}`).digest("hex"));
    const listed = (await (await fetch(`${gw.url}/-/batches?limit=100`)).json()) as { data: Json[] };
    expect(listed.data.find((b) => b.id === created.id)).toMatchObject({
      status: "completed",
      api: "openai",
      owner: "",
      request_counts: { total: 1, completed: 1, failed: 0 },
    });
  });

  it("runs a Message Batch through the official Anthropic SDK", async () => {
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: "unused", maxRetries: 0 });
    const params = (model: string, text: string) => ({ model, max_tokens: 64, messages: [{ role: "user" as const, content: text }] });
    const created = await anthropic.messages.batches.create({
      requests: [
        { custom_id: "native-1", params: params("claude-native", "hi native") },
        { custom_id: "chat-1", params: params("claude-chat", "hi chat") },
        { custom_id: "native-2", params: params("claude-native", "again") },
      ],
    });
    expect(created).toMatchObject({
      type: "message_batch",
      processing_status: "in_progress",
      request_counts: { processing: 3, succeeded: 0 },
      results_url: null,
    });
    let batch = created;
    await waitUntil(
      async () => (batch = await anthropic.messages.batches.retrieve(created.id)).processing_status === "ended",
      30_000,
      () => JSON.stringify(batch),
    );
    expect(batch.request_counts).toEqual({ processing: 0, succeeded: 3, errored: 0, canceled: 0, expired: 0 });
    expect(batch.results_url).toBe(`${gw.url}/v1/messages/batches/${created.id}/results`);
    const results: Array<{ custom_id: string; result: { type: string; message?: { type: string; content: Array<{ text?: string }> } } }> = [];
    for await (const line of await anthropic.messages.batches.results(created.id)) results.push(line as (typeof results)[number]);
    expect(results.map((r) => r.custom_id).sort()).toEqual(["chat-1", "native-1", "native-2"]);
    for (const r of results) expect(r.result).toMatchObject({ type: "succeeded", message: { type: "message" } });
    const chat = results.find((r) => r.custom_id === "chat-1");
    expect(chat?.result.message?.content[0]?.text).toBe("echo: hi chat");
    const page = await anthropic.messages.batches.list({ limit: 10 });
    expect(page.data.map((b) => b.id)).toContain(created.id);
    await expect(anthropic.messages.batches.create({ requests: [{ custom_id: "x", params: params("no-such-model", "x") }] })).rejects.toMatchObject({
      status: 400,
    });
  });
});
