/**
 * Batch lines run by a standalone relay process, on Redis and S3 with `relay.embedded` unset
 * (false with Redis): real gateway and relay processes (`--role relay`), a redis-server of this
 * file's own, the suite's s3rver and the fake chat-completions backend. The gateway validates a
 * batch and runs none of its lines: with no relay the batch is `in_progress`, nothing completed
 * and nothing sent. A relay started then runs every line and the batch completes; its output is
 * read through the gateway. Each process's `/metrics` says who ran the lines: the relay's counts
 * them all, the gateway's none. No sleeps: every wait polls with a deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";
import { type RunningServer, startRedis, TEST_BUCKET } from "../support/servers.ts";
import { storesYaml } from "../support/stores-yaml.ts";

type Json = Record<string, unknown>;
const LINES = 6;

describe("batch lines on Redis without an embedded relay", () => {
  let backend: FakeBackend;
  let redis: RunningServer;
  const running: GatewayProcess[] = [];

  beforeAll(async () => {
    [backend, redis] = await Promise.all([startLlmBackend(), startRedis()]);
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill()));
    await backend?.stop();
    await redis?.stop();
  });

  // Each process renders {{PORT}} with a port of its own: the relay's metrics listener is at its `url`.
  const yaml = () => `
${storesYaml({ bucket: TEST_BUCKET, redisAddr: redis.url })}
relay:
  metrics_addr: "127.0.0.1:{{PORT}}"
batches:
  enabled: true
services:
  - { type: chat, model: chat-small, provider: chat_completions, inference_url: ${backend.url}, operations: { chat: [/v1/chat/completions] } }
`;

  async function createBatch(gw: GatewayProcess): Promise<string> {
    const lines = Array.from(
      { length: LINES },
      (_, i) =>
        JSON.stringify({
          custom_id: `line-${i}`,
          method: "POST",
          url: "/v1/chat/completions",
          body: { model: "chat-small", messages: [{ role: "user", content: `n${i}` }] },
        }),
    );
    const form = new FormData();
    form.append("purpose", "batch");
    form.append("file", new Blob([lines.join("\n") + "\n"]), "input.jsonl");
    const file = (await (await fetch(`${gw.url}/v1/files`, { method: "POST", body: form })).json()) as Json;
    const created = await fetch(`${gw.url}/v1/batches`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }),
    });
    expect(created.status).toBe(200);
    return ((await created.json()) as Json).id as string;
  }

  it("runs no line in the gateway; a relay started later runs them all", async () => {
    const gw = await startGateway(yaml());
    running.push(gw);
    const batchOf = async (id: string): Promise<Json> => (await (await fetch(`${gw.url}/v1/batches/${id}`)).json()) as Json;
    const calls = backend.received.length;
    const id = await createBatch(gw);
    let batch: Json = {};
    await waitUntil(async () => (batch = await batchOf(id)).status !== "validating", 30_000, () => JSON.stringify(batch));
    expect(batch).toMatchObject({ status: "in_progress", request_counts: { total: LINES, completed: 0, failed: 0 } });
    expect(backend.received.length - calls).toBe(0);

    const relay = await startGateway(yaml(), { role: "relay" });
    running.push(relay);
    await waitUntil(async () => (batch = await batchOf(id)).status === "completed", 30_000, () => `${JSON.stringify(batch)}\n${relay.output()}`);
    expect(batch.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const output = (await (await fetch(`${gw.url}/v1/files/${batch.output_file_id}/content`)).text()).split("\n").filter((line) => line !== "");
    const answers = Object.fromEntries(
      output.map((line) => JSON.parse(line) as { custom_id: string; response: { body: { choices: Array<{ message: { content: string } }> } } })
        .map((line) => [line.custom_id, line.response.body.choices[0].message.content]),
    );
    expect(answers).toEqual(Object.fromEntries(Array.from({ length: LINES }, (_, i) => [`line-${i}`, `echo: n${i}`])));
    expect(backend.received.length - calls).toBe(LINES);
    // Who ran the lines: the relay, every one; the gateway, none.
    const lines = { model: "chat-small", outcome: "succeeded" };
    expect(metricValue(await (await fetch(`${relay.url}/metrics`)).text(), "svc_batch_lines_total", lines)).toBe(LINES);
    expect(metricValue(await (await fetch(`${gw.url}/metrics`)).text(), "svc_batch_lines_total", lines)).toBe(0);
  }, 90_000);
});
