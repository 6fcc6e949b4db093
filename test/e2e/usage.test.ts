/**
 * Usage tracking and reporting as a user meets it (docs/design.md#usage): a real gateway
 * process on the suite's redis-server, database 7 (flushed when the file starts), in front
 * of fake backends; and, for calendar buckets across a year boundary and ISO week 53, an
 * in-process gateway on the same database whose clock the test sets. No sleeps: every
 * wait polls with a deadline.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openStores } from "../../adapters/stores.ts";
import { ManualClock } from "../../core/clock.ts";
import { Gateway } from "../../core/gateway.ts";
import { silentLogger } from "../../core/log.ts";
import { builtinPlugins } from "../../plugins/index.ts";
import { type HeldBackend, startHeldBackend } from "../fixtures/held-backend.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { CHAT_USAGE, type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";

const DB = 7;
const DAY = 86_400_000;
const HOUR = 3_600_000;

type Json = Record<string, unknown>;
interface Record24 {
  consumer: string;
  retention: string;
  last_active?: string;
  usage: Array<{ service_type: string; total: Json; window?: Json }>;
}
interface Page {
  total: number;
  limit: number;
  offset: number;
  consumers: Record24[];
}
interface Report {
  service_type: string;
  period: string;
  from: string;
  to: string;
  buckets: Array<Json & { bucket: string }>;
  total?: Json;
}

async function withRedis<T>(fn: (client: ReturnType<typeof createClient>) => Promise<T>): Promise<T> {
  const client = createClient({ url: inject("redisUrl"), database: DB });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

const running: GatewayProcess[] = [];
let held: HeldBackend;
let inference: InferenceBackend;
let llm: FakeBackend;

beforeAll(async () => {
  await withRedis((client) => client.flushDb());
  [held, inference, llm] = await Promise.all([startHeldBackend(), startInferenceBackend(), startLlmBackend()]);
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((gw) => gw.kill()));
  await Promise.all([held.close(), inference.close(), llm.stop()]);
});

function services(): string {
  return `
services:
  - type: echo
    model: echo
    inference_url: ${held.url}
    operations: { run: [/v1/echo] }
  - type: transcription
    model: whisper
    inference_url: ${inference.url}
    operations: { transcribe: [/transcribe] }
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
`;
}

function stores(): string {
  return `
redis:
  addr: ${JSON.stringify(inject("redisUrl"))}
  db: ${DB}
object_store:
  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "gw-usage-objects-")))}
relay:
  embedded: true
`;
}

async function start(yaml: string): Promise<GatewayProcess> {
  const gw = await startGateway(yaml);
  running.push(gw);
  return gw;
}

/**
 * Each request on a connection of its own: with `server.workers: 2` connections, not requests,
 * are spread over the workers, so one kept-alive connection would meet one worker only.
 */
const SPREAD = { connection: "close" };

const get = async (gw: GatewayProcess, path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gw.url}${path}`, { headers: { ...SPREAD, ...headers } });
  return { status: response.status, body: (await response.json()) as Json };
};

async function echo(gw: GatewayProcess, consumer: string | undefined, model = "echo"): Promise<number> {
  const response = await fetch(`${gw.url}/v1/echo`, {
    method: "POST",
    headers: { ...SPREAD, "content-type": "application/json", ...(consumer ? { "x-consumer": consumer } : {}) },
    body: JSON.stringify({ model }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function chat(gw: GatewayProcess, consumer: string): Promise<number> {
  const response = await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { ...SPREAD, "content-type": "application/json", "x-consumer": consumer },
    body: JSON.stringify({ model: "gpt", messages: [{ role: "user", content: "hi" }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function submit(gw: GatewayProcess, consumer: string): Promise<string> {
  const form = new FormData();
  form.append("file", new Blob(["audio"], { type: "audio/wav" }), "a.wav");
  const response = await fetch(`${gw.url}/jobs/transcription`, { method: "POST", body: form, headers: { ...SPREAD, "x-consumer": consumer } });
  expect(response.status).toBe(202);
  return ((await response.json()) as { job_id: string }).job_id;
}

/** YYYY-MM-DD of a UTC day `offset` days from today. */
const isoDay = (offset = 0) => new Date(Date.now() + offset * DAY).toISOString().slice(0, 10);

describe("without server.consumer_header", () => {
  it("answers 501 on every usage endpoint and writes nothing", async () => {
    const gw = await start(`${stores()}${services()}`);
    expect(await echo(gw, "nobody")).toBe(200);
    for (const path of ["/usage", "/-/usage", `/-/usage/report?type=echo&period=daily&from=${isoDay()}&to=${isoDay()}`]) {
      const { status, body } = await get(gw, path, { "x-consumer": "nobody" });
      expect(status).toBe(501);
      expect(body).toEqual({
        error: { message: expect.stringContaining("set server.consumer_header"), type: "not_implemented_error", code: "not_implemented" },
      });
    }
    expect(await withRedis((client) => client.keys("usage:*"))).toEqual([]);
    await gw.kill();
  });
});

// Again with two worker processes (server.workers: 2): the counts are the store's, so the
// records and reports are the same whichever worker counted each request.
describe.each([1, 2])("with consumer identification (server.workers: %i)", (workers) => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    await withRedis((client) => client.flushDb());
    gw = await start(`
server:
  workers: ${workers}
  consumer_header: X-Consumer
usage:
  retention: 8760h
rate_limits:
  echo:
    "*": { rate: 100, period: 1m }
${stores()}${services()}`);
    await waitUntil(
      async () => (await (await fetch(`${gw.url}/metrics`, { headers: SPREAD })).text()).includes(`\nsvc_workers ${workers}\n`),
      20_000,
      () => gw.output(),
    );
    // alice: 2 echo, 1 chat, 1 job; bob: 3 echo; carol: 1 echo, 2 chats. Anonymous and refused requests are not usage.
    for (const [consumer, n] of [["alice", 2], ["bob", 3], ["carol", 1]] as const) {
      for (let i = 0; i < n; i++) expect(await echo(gw, consumer)).toBe(200);
    }
    expect(await echo(gw, undefined)).toBe(200);
    expect(await echo(gw, "alice", "no-such-model")).toBe(404);
    expect(await chat(gw, "alice")).toBe(200);
    expect(await chat(gw, "carol")).toBe(200);
    expect(await chat(gw, "carol")).toBe(200);
    const jobId = await submit(gw, "alice");
    await waitUntil(
      async () => (await get(gw, `/jobs/transcription/${jobId}`, {})).body.status === "completed",
      15_000,
      () => `the job never completed:\n${gw.output()}`,
    );
    // Counting happens after each response: wait until the last counts are in.
    await waitUntil(
      async () => {
        const { body } = await get(gw, "/usage", { "x-consumer": "alice" });
        const job = (body as unknown as Record24).usage?.find((u) => u.service_type === "transcription");
        return Number(job?.total.processing_time_seconds ?? 0) > 0;
      },
      15_000,
      () => "alice's job was never counted",
    );
    await waitUntil(async () => (await get(gw, "/-/usage?type=chat", {})).body.total === 2, 10_000, () => "chat usage never counted");
  });
  // Its relay would take the next block's jobs, whose files are in another directory.
  afterAll(async () => {
    await gw.kill();
  });

  it("GET /usage: the caller's record, per service type, with the live window", async () => {
    const { status, body } = await get(gw, "/usage", { "x-consumer": "alice" });
    expect(status).toBe(200);
    const record = body as unknown as Record24;
    expect(record.consumer).toBe("alice");
    expect(record.retention).toBe("8760h");
    expect(Date.now() - Date.parse(record.last_active ?? "")).toBeLessThan(60_000);
    const byType = Object.fromEntries(record.usage.map((u) => [u.service_type, u]));
    expect(Object.keys(byType).sort()).toEqual(["chat", "echo", "transcription"]);
    expect(byType.chat.total).toEqual({ requests: 1, tokens: { prompt: CHAT_USAGE.prompt_tokens, completion: CHAT_USAGE.completion_tokens } });
    expect(byType.chat.window).toBeUndefined();
    // The 404 was neither usage nor counted by the rate limit (checked after routing).
    expect(byType.echo.total).toEqual({ requests: 2, jobs: 0, processing_time_seconds: 0 });
    expect(byType.echo.window).toEqual({ requests: 2, reset_at: expect.any(String) });
    const resetAt = Date.parse(String(byType.echo.window?.reset_at));
    expect(resetAt).toBeGreaterThan(Date.now());
    expect(resetAt).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(byType.transcription.total).toEqual({ requests: 1, jobs: 1, processing_time_seconds: expect.any(Number) });
    expect(byType.transcription.total.processing_time_seconds).toBeGreaterThan(0);
  });

  it("GET /usage: 400 without the consumer header; an unknown consumer has an empty record", async () => {
    const missing = await get(gw, "/usage");
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: { message: expect.stringContaining("X-Consumer"), type: "invalid_request_error", code: "invalid_request" } });
    expect((await get(gw, "/usage", { "x-consumer": "stranger" })).body).toEqual({ consumer: "stranger", retention: "8760h", usage: [] });
  });

  it("keeps per-consumer records for usage.retention, set when the record is created", async () => {
    const ttl = await withRedis((client) => client.pTTL("usage:consumer:alice"));
    expect(ttl).toBeGreaterThan(8760 * HOUR - 10 * 60_000);
    expect(ttl).toBeLessThanOrEqual(8760 * HOUR);
  });

  it("GET /-/usage: every consumer, paginated; by type ranked by that type's requests", async () => {
    const all = (await get(gw, "/-/usage")).body as unknown as Page;
    expect(all.total).toBe(3);
    expect(all.limit).toBe(20);
    expect(all.offset).toBe(0);
    expect(all.consumers.map((c) => c.consumer).sort()).toEqual(["alice", "bob", "carol"]);

    const first = (await get(gw, "/-/usage?type=echo&limit=2")).body as unknown as Page;
    expect(first).toMatchObject({ total: 3, limit: 2, offset: 0 });
    expect(first.consumers.map((c) => [c.consumer, c.usage.map((u) => [u.service_type, u.total.requests])])).toEqual([
      ["bob", [["echo", 3]]],
      ["alice", [["echo", 2]]],
    ]);
    const second = (await get(gw, "/-/usage?type=echo&limit=2&offset=2")).body as unknown as Page;
    expect(second.consumers.map((c) => c.consumer)).toEqual(["carol"]);

    const chat = (await get(gw, "/-/usage?type=chat")).body as unknown as Page;
    expect(chat.total).toBe(2);
    expect(chat.consumers.map((c) => [c.consumer, c.usage])).toEqual([
      ["carol", [{
        service_type: "chat",
        total: { requests: 2, tokens: { prompt: 2 * CHAT_USAGE.prompt_tokens, completion: 2 * CHAT_USAGE.completion_tokens } },
      }]],
      ["alice", [{ service_type: "chat", total: { requests: 1, tokens: { prompt: CHAT_USAGE.prompt_tokens, completion: CHAT_USAGE.completion_tokens } } }]],
    ]);
  });

  it("GET /-/usage: consumer and type filters, and page parameter checks", async () => {
    const bob = (await get(gw, "/-/usage?consumer=bob")).body as unknown as Page;
    expect(bob).toMatchObject({ total: 1, limit: 20, offset: 0 });
    expect(bob.consumers.map((c) => [c.consumer, c.usage.map((u) => u.service_type)])).toEqual([["bob", ["echo"]]]);
    const bobChat = (await get(gw, "/-/usage?consumer=bob&type=chat")).body as unknown as Page;
    expect(bobChat.consumers[0].usage).toEqual([]);
    expect(((await get(gw, "/-/usage?limit=500")).body as unknown as Page).limit).toBe(100);
    expect(((await get(gw, "/-/usage?limit=99999999999999999999")).body as unknown as Page).limit).toBe(100);
    expect(((await get(gw, "/-/usage?offset=99999999999999999999")).body as unknown as Page).consumers).toEqual([]);
    for (const bad of ["limit=0", "limit=abc", "offset=-1", "offset=1e3", "limit=1.5"]) {
      const { status, body } = await get(gw, `/-/usage?${bad}`);
      expect(status).toBe(400);
      expect(JSON.stringify(body)).toContain(bad.split("=")[0]);
    }
  });

  it("GET /-/usage/report: every day of the range, zero-filled, summed across consumers, with total", async () => {
    const range = `from=${isoDay(-1)}&to=${isoDay(1)}`;
    const echoReport = (await get(gw, `/-/usage/report?type=echo&period=daily&${range}&total=true`)).body as unknown as Report;
    expect(echoReport).toMatchObject({ service_type: "echo", period: "daily", from: isoDay(-1), to: isoDay(1) });
    expect(echoReport.buckets.map((b) => b.bucket)).toEqual([-1, 0, 1].map((d) => isoDay(d).replaceAll("-", "")));
    expect(echoReport.buckets.reduce((sum, b) => sum + Number(b.requests), 0)).toBe(6);
    expect(echoReport.total).toEqual({ requests: 6, jobs: 0, processing_time_seconds: 0 });

    const chatReport = (await get(gw, `/-/usage/report?type=chat&period=daily&${range}&total=true`)).body as unknown as Report;
    // Tokens appear only in buckets where they were tracked.
    const active = chatReport.buckets.filter((b) => b.requests !== 0);
    expect(active).toHaveLength(1);
    expect(active[0].tokens).toEqual({ prompt: 3 * CHAT_USAGE.prompt_tokens, completion: 3 * CHAT_USAGE.completion_tokens });
    for (const idle of chatReport.buckets.filter((b) => b.requests === 0)) expect(idle).toEqual({ bucket: idle.bucket, requests: 0 });
    expect(chatReport.total).toEqual({ requests: 3, tokens: { prompt: 3 * CHAT_USAGE.prompt_tokens, completion: 3 * CHAT_USAGE.completion_tokens } });

    const jobs = (await get(gw, `/-/usage/report?type=transcription&period=monthly&${range}&total=true`)).body as unknown as Report;
    expect(jobs.total).toMatchObject({ requests: 1, jobs: 1 });
    expect(Number(jobs.total?.processing_time_seconds)).toBeGreaterThan(0);
    // Without total=true there is no total.
    expect((await get(gw, `/-/usage/report?type=echo&period=weekly&${range}`)).body.total).toBeUndefined();
  });

  it("keeps daily buckets 400 days, weekly 800, monthly for ever", async () => {
    const [daily, weekly, monthly] = await withRedis(async (client) => {
      const keys = async (pattern: string) => (await client.keys(pattern))[0];
      return await Promise.all([
        client.pTTL(await keys("usage:daily:echo:*")),
        client.pTTL(await keys("usage:weekly:echo:*")),
        client.pTTL(await keys("usage:monthly:echo:*")),
      ]);
    });
    expect(daily).toBeGreaterThan(399 * DAY);
    expect(daily).toBeLessThanOrEqual(400 * DAY);
    expect(weekly).toBeGreaterThan(799 * DAY);
    expect(weekly).toBeLessThanOrEqual(800 * DAY);
    expect(monthly).toBe(-1);
  });

  it("GET /-/usage/report: 400 naming the missing or malformed parameter, or a range over 400 buckets", async () => {
    const cases: Array<[string, string]> = [
      ["period=daily&from=2026-01-01&to=2026-01-02", '"type"'],
      ["type=echo&from=2026-01-01&to=2026-01-02", '"period"'],
      ["type=echo&period=hourly&from=2026-01-01&to=2026-01-02", '"period"'],
      ["type=echo&period=daily&to=2026-01-02", '"from"'],
      ["type=echo&period=daily&from=2026-02-30&to=2026-03-02", '"from"'],
      ["type=echo&period=daily&from=2026-01-01", '"to"'],
      ["type=echo&period=daily&from=2026-01-01&to=01/02/2026", '"to"'],
      ["type=echo&period=daily&from=2026-01-03&to=2026-01-02", '"from"'],
      ["type=echo&period=daily&from=2026-01-01&to=2027-02-05", "401 daily buckets"],
    ];
    for (const [query, named] of cases) {
      const { status, body } = await get(gw, `/-/usage/report?${query}`);
      expect(status, query).toBe(400);
      expect((body as { error: { message: string } }).error.message, query).toContain(named);
    }
    expect((await get(gw, "/-/usage/report?type=echo&period=daily&from=2026-01-01&to=2027-02-04")).status).toBe(200);
    expect((await get(gw, "/-/usage/report?type=echo&period=weekly&from=2020-01-01&to=2027-02-04")).status).toBe(200);
  });
});

describe("report buckets on a driven clock", () => {
  let gateway: Gateway;
  const clock = new ManualClock();
  beforeAll(async () => {
    const config = `
server:
  consumer_header: X-Consumer
redis:
  addr: ${JSON.stringify(inject("redisUrl"))}
  db: ${DB}
relay:
  embedded: false
services:
  - type: asr
    model: asr
    inference_url: http://backend.invalid
    operations: { run: [/v1/asr] }
`;
    gateway = await Gateway.create({
      readConfig: async () => config,
      env: {},
      importModule: () => Promise.reject(new Error("no user plugins here")),
      openStores,
      plugins: builtinPlugins,
      clock,
      log: silentLogger,
      // The backend answers at once; only the gateway's clock matters here.
      fetch: async () => Response.json({ ok: true }),
    });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function requestsAt(iso: string, n: number, consumer = "dana"): Promise<void> {
    clock.set(Date.parse(iso));
    for (let i = 0; i < n; i++) {
      const response = await gateway.fetch(
        new Request("http://gateway/v1/asr", { method: "POST", headers: { "content-type": "application/json", "x-consumer": consumer }, body: "{}" }),
      );
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
  }

  async function report(query: string): Promise<Report> {
    const response = await gateway.fetch(new Request(`http://gateway/-/usage/report?type=asr&total=true&${query}`));
    expect(response.status).toBe(200);
    return (await response.json()) as Report;
  }

  const buckets = (r: Report) => r.buckets.map((b) => [b.bucket, b.requests]);

  it("labels days, ISO weeks (week 53 of 2026 runs into 2027) and months across the year boundary", async () => {
    await requestsAt("2026-11-30T23:59:59Z", 1);
    await requestsAt("2026-12-31T10:00:00Z", 2);
    await requestsAt("2027-01-01T00:00:00Z", 2, "erin");
    await requestsAt("2027-01-03T23:59:59Z", 1);
    await requestsAt("2027-01-04T00:00:00Z", 1);
    // Written after each response: wait until the last one is in.
    await waitUntil(async () => (await report("period=monthly&from=2026-11-01&to=2027-01-31")).total?.requests === 7, 10_000, () => "usage never counted");

    const daily = await report("period=daily&from=2026-12-30&to=2027-01-04");
    expect(buckets(daily)).toEqual([
      ["20261230", 0],
      ["20261231", 2],
      ["20270101", 2],
      ["20270102", 0],
      ["20270103", 1],
      ["20270104", 1],
    ]);
    expect(daily.total).toEqual({ requests: 6, jobs: 0, processing_time_seconds: 0 });

    const weekly = await report("period=weekly&from=2026-12-21&to=2027-01-10");
    expect(buckets(weekly)).toEqual([
      ["2026-W52", 0],
      ["2026-W53", 5],
      ["2027-W01", 1],
    ]);

    const monthly = await report("period=monthly&from=2026-11-15&to=2027-02-01");
    expect(buckets(monthly)).toEqual([
      ["202611", 1],
      ["202612", 2],
      ["202701", 4],
      ["202702", 0],
    ]);
    expect(monthly).toMatchObject({ service_type: "asr", period: "monthly", from: "2026-11-15", to: "2027-02-01", total: { requests: 7 } });
  });
});
