/**
 * A 2,000-line batch (RELIABILITY_BATCH_LINES), end to end through the openai client's HTTP calls, on real gateway
 * and relay processes in front of the fake chat-completions backend. Lines run where the relay
 * runs (docs/batches.md#how-lines-run):
 *
 * - the embedded default (memory store, file objects): the gateway's embedded relay runs the
 *   batch to `completed`, every line answered exactly once in the output file; the gateway's peak
 *   RSS is reported. (The embedded store lives in the process: a kill there loses the batch with
 *   everything else, so the kill runs on Redis.)
 * - Redis with S3 as deployed by default (`relay.embedded` unset, so false: the gateway runs no
 *   line) with two standalone relays (`--role relay`) sharing the work: one relay is killed with
 *   SIGKILL mid-batch and started again; its lines run again once their leases lapse, and still
 *   every line is in the output exactly once, with its own answer. Two relays rather than a
 *   gateway's embedded relay beside one standalone: that is the Redis layout users run
 *   (deploy/compose.yaml), the survivor keeps working through the kill, and the gateway the
 *   client talks to stays up; the embedded relay's line worker is the one the first run covers.
 *
 * The figures (lines/s, peak RSS, backend calls) are printed as one `batch-kill:` line.
 *
 * 2,000 lines is what CI runs: the kill still falls mid-batch (after a quarter, with 32 lines in
 * flight and 1,500 to go), and every line is checked once in the output, so each property is
 * checked as often as the test can tell. A longer run (RELIABILITY_BATCH_LINES=10000, the size
 * the batch work was measured at) adds lines, not properties: the peak RSS of a bigger input
 * and output file, and more lease lapses after the kill. On the loaded 2-core development
 * machine the 10,000-line runs took 27 s embedded (375 lines/s, gateway peak RSS 229 MB) and
 * 52 s on Redis (191 lines/s, the killed lines' 30 s leases included; relay peak RSS 150 MB,
 * gateway 142 MB, 5 lines sent twice); the file's 2,000-line runs 73 s in all.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { watchRss } from "../support/process-memory.ts";
import { metricValue } from "../support/prometheus.ts";
import { type RunningServer, startRedis } from "../support/servers.ts";

const LINES = Number(process.env.RELIABILITY_BATCH_LINES ?? 2_000);
const DEADLINE_MS = 240_000;
type Json = Record<string, unknown>;

const services = (url: string) => `
services:
  - { type: chat, model: chat-small, provider: chat_completions, inference_url: ${url}, operations: { chat: [/v1/chat/completions] } }
`;

function inputFile(): Blob {
  const lines: string[] = [];
  for (let i = 0; i < LINES; i++) {
    lines.push(
      JSON.stringify({
        custom_id: `line-${i}`,
        method: "POST",
        url: "/v1/chat/completions",
        body: { model: "chat-small", messages: [{ role: "user", content: `n${i}` }] },
      }),
    );
  }
  return new Blob([lines.join("\n") + "\n"]);
}

async function createBatch(gw: GatewayProcess): Promise<string> {
  const form = new FormData();
  form.append("purpose", "batch");
  form.append("file", inputFile(), "big.jsonl");
  const file = (await (await fetch(`${gw.url}/v1/files`, { method: "POST", body: form })).json()) as Json;
  const created = await fetch(`${gw.url}/v1/batches`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }),
  });
  expect(created.status).toBe(200);
  return ((await created.json()) as Json).id as string;
}

const batchOf = async (gw: GatewayProcess, id: string): Promise<Json> => (await (await fetch(`${gw.url}/v1/batches/${id}`)).json()) as Json;
const completedOf = (batch: Json) => (batch.request_counts as { completed: number }).completed;

/** Every output line parsed; checks each custom_id is there once, with its own answer. */
async function checkOutput(gw: GatewayProcess, batch: Json): Promise<void> {
  const text = await (await fetch(`${gw.url}/v1/files/${batch.output_file_id}/content`)).text();
  const seen = new Map<string, number>();
  let wrong = 0;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const parsed = JSON.parse(line) as { custom_id: string; response: { status_code: number; body: { choices: Array<{ message: { content: string } }> } } };
    seen.set(parsed.custom_id, (seen.get(parsed.custom_id) ?? 0) + 1);
    if (parsed.response.status_code !== 200 || parsed.response.body.choices[0].message.content !== `echo: n${parsed.custom_id.slice(5)}`) wrong++;
  }
  expect(seen.size).toBe(LINES);
  expect([...seen.values()].filter((count) => count !== 1)).toEqual([]);
  expect(wrong).toBe(0);
}

describe(`a ${LINES}-line batch`, () => {
  let backend: FakeBackend;
  let redis: RunningServer;
  const dir = mkdtempSync(join(tmpdir(), "gw-batch-kill-"));
  const running: GatewayProcess[] = [];

  beforeAll(async () => {
    [backend, redis] = await Promise.all([startLlmBackend(), startRedis()]);
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill()));
    await backend?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("on the embedded default: every line answered once; peak RSS reported", async () => {
    const gw = await startGateway(
      `batches: { enabled: true, concurrency: 32 }\nobject_store: { dir: ${JSON.stringify(join(dir, "memory"))} }\n${services(backend.url)}`,
    );
    running.push(gw);
    const rss = watchRss(gw.child.pid);
    const calls = backend.received.length;
    const started = Date.now();
    const id = await createBatch(gw);
    let batch: Json = {};
    await waitUntil(async () => (batch = await batchOf(gw, id)).status === "completed", DEADLINE_MS, () => JSON.stringify(batch));
    const seconds = (Date.now() - started) / 1000;
    await rss?.stop();
    expect(batch.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    await checkOutput(gw, batch);
    expect(backend.received.length - calls).toBe(LINES);
    console.log(
      `batch-kill: ${
        JSON.stringify({
          store: "embedded",
          lines: LINES,
          seconds,
          lines_per_second: Math.round(LINES / seconds),
          rss_before_mb: rss ? Math.round(rss.before / 1048576) : null,
          peak_rss_mb: rss ? Math.round(rss.peak() / 1048576) : null,
          backend_calls: backend.received.length - calls,
        })
      }`,
    );
    await gw.stop();
    running.splice(running.indexOf(gw), 1);
  }, DEADLINE_MS + 30_000);

  it("on Redis with S3: a standalone relay killed with SIGKILL mid-batch and started again loses no line and answers none twice", async () => {
    // Each relay renders {{PORT}} with a port of its own: its /metrics is at its `url`.
    const yaml = `batches: { enabled: true, concurrency: 32 }\nredis: { addr: ${JSON.stringify(redis.url)} }\nobject_store: { endpoint: ${
      JSON.stringify(inject("s3Endpoint"))
    }, access_key: S3RVER, secret_key: S3RVER, bucket: gateway-test }\nrelay: { metrics_addr: "127.0.0.1:{{PORT}}" }\n${services(backend.url)}`;
    const linesRun = async (proc: GatewayProcess) =>
      metricValue(await (await fetch(`${proc.url}/metrics`)).text(), "svc_batch_lines_total", { model: "chat-small", outcome: "succeeded" });
    const gw = await startGateway(yaml);
    running.push(gw);
    const [first, second] = await Promise.all([startGateway(yaml, { role: "relay" }), startGateway(yaml, { role: "relay" })]);
    running.push(first, second);
    const rss = watchRss(first.child.pid);
    const gatewayRss = watchRss(gw.child.pid);
    const calls = backend.received.length;
    const started = Date.now();
    const id = await createBatch(gw);
    let batch: Json = {};
    const progress = () => `${JSON.stringify(batch)}\n${first.output().slice(-2000)}\n${second.output().slice(-2000)}`;
    // Mid-batch, and the relay to kill has run lines of it (so it holds some at the kill).
    await waitUntil(async () => completedOf(batch = await batchOf(gw, id)) >= LINES / 4 && (await linesRun(first)) > 0, DEADLINE_MS, progress);
    const peakBeforeKill = rss?.peak();
    await rss?.stop();
    const ranByKilledRelay = await linesRun(first);
    await first.kill();
    const killedAt = completedOf(await batchOf(gw, id));
    const restarted = await startGateway(yaml, { role: "relay" });
    running.push(restarted);
    await waitUntil(async () => (batch = await batchOf(gw, id)).status === "completed", DEADLINE_MS, progress);
    const seconds = (Date.now() - started) / 1000;
    await gatewayRss?.stop();
    expect(batch.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    await checkOutput(gw, batch);
    const backendCalls = backend.received.length - calls;
    // A line in flight at the kill may have reached the backend twice; none more.
    expect(backendCalls).toBeGreaterThanOrEqual(LINES);
    expect(backendCalls - LINES).toBeLessThanOrEqual(2 * 32);
    // The relays ran the lines, the gateway none.
    expect(await linesRun(gw)).toBe(0);
    console.log(
      `batch-kill: ${
        JSON.stringify({
          store: "redis+s3",
          lines: LINES,
          killed_after_lines: killedAt,
          run_by_killed_relay_before_kill: ranByKilledRelay,
          run_by_survivor: await linesRun(second),
          run_by_restarted_relay: await linesRun(restarted),
          seconds,
          lines_per_second: Math.round(LINES / seconds),
          peak_rss_mb_killed_relay: peakBeforeKill ? Math.round(peakBeforeKill / 1048576) : null,
          peak_rss_mb_gateway: gatewayRss ? Math.round(gatewayRss.peak() / 1048576) : null,
          backend_calls: backendCalls,
          ran_twice: backendCalls - LINES,
        })
      }`,
    );
  }, 2 * DEADLINE_MS + 60_000);
});
