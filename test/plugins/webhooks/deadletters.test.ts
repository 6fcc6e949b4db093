/**
 * The webhook admin endpoints on both stores (memory, and the suite's redis-server on
 * database 30, which test/plugins/async-jobs/queues-admin.test.ts shares: each file clears
 * only its own keys before each test): dead letters listed a page at a time, redelivered through
 * the durable retry schedule and signed at the new attempt, the retry queue listed, and the
 * 400s for bad input; and the audit line of a redelivery.
 */
import { afterEach, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { createLogger } from "../../../core/log.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import auditLog from "../../../plugins/audit-log/index.ts";
import webhooks from "../../../plugins/webhooks/index.ts";
import { signatureHeader } from "../../../plugins/webhooks/signature.ts";
import { clearRedisKeys } from "../../support/redis-keys.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const DB = 30;
const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const SECRET = "s3cret";

type Json = Record<string, unknown>;

const stores: Array<{ name: string; open: () => Promise<KvStore | undefined> }> = [
  { name: "memory", open: async () => undefined },
  {
    name: "redis",
    open: async () => {
      await clearRedisKeys(inject("redisUrl"), DB, ["webhook:*"]);
      return await RedisKv.connect({ url: inject("redisUrl"), db: DB });
    },
  },
];

const jobId = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;

describe.each(stores)("webhook admin endpoints: $name", ({ open }) => {
  let gw: TestRuntime;
  let redis: KvStore | undefined;
  let clock: ManualClock;
  let receiverStatus: number;
  let sent: Array<{ url: string; headers: Headers; body: string }>;
  afterEach(async () => {
    await gw?.close();
    await redis?.close();
  });

  async function start(): Promise<void> {
    clock = new ManualClock(T0);
    redis = await open();
    receiverStatus = 500;
    sent = [];
    gw = await startTestRuntime(`webhooks:\n  max_retries: 1\n  signing_secret: ${SECRET}\n`, [webhooks], {
      clock,
      kv: redis,
      fetchPinned: async (input, _addresses, init = {}) => {
        sent.push({ url: String(input), headers: new Headers(init.headers), body: String(init.body) });
        return new Response(null, { status: receiverStatus });
      },
      lookupHost: async () => ["93.184.216.34"],
    });
  }

  /** A job ends; its only attempt (max_retries 1) gets a 500, so it is dead-lettered. */
  async function deadLetter(n: number): Promise<void> {
    const before = sent.length;
    gw.runtime.emit("job.terminal", {
      job: {
        id: jobId(n),
        status: "failed",
        error: `boom ${n}`,
        service_type: "transcription",
        model: "whisper",
        created_at: new Date(T0).toISOString(),
        updated_at: new Date(T0).toISOString(),
        completed_at: new Date(T0).toISOString(),
        priority: false,
        callback_url: `https://hooks.example.com/${n}`,
        operation: "",
        path: "/t",
        input_key: "",
        filename: "a.wav",
        content_type: "audio/wav",
        size: 1,
      },
    });
    const deadline = Date.now() + 5000;
    while ((await gw.kv.llen("webhook:deadletter")) < n || sent.length === before) {
      if (Date.now() > deadline) throw new Error("the delivery was not dead-lettered within 5 s");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  const get = async (path: string) => {
    const response = await gw.request(path);
    return { status: response.status, body: (await response.json()) as Json };
  };
  const post = async (path: string, body: unknown) => {
    const response = await gw.request(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };

  it("lists dead letters with their error, a page at a time", async () => {
    await start();
    for (const n of [1, 2, 3]) await deadLetter(n);
    const all = await get("/-/webhooks/deadletter");
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, limit: 20, offset: 0 });
    expect((all.body.deliveries as Json[])[0]).toEqual({
      id: jobId(1),
      job_id: jobId(1),
      service_type: "transcription",
      status: "failed",
      url: "https://hooks.example.com/1",
      attempts: 1,
      failed_at: new Date(T0).toISOString(),
      last_error: "HTTP 500",
    });
    const page = await get("/-/webhooks/deadletter?limit=1&offset=1");
    expect(page.body).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect((page.body.deliveries as Json[]).map((d) => d.id)).toEqual([jobId(2)]);
  });

  it("redelivers the named dead letters through the retry schedule, signed anew, with the same body", async () => {
    await start();
    await deadLetter(1);
    await deadLetter(2);
    const original = sent[0]!;
    receiverStatus = 200;
    clock.advance(3_600_000);

    expect(await post("/-/webhooks/deadletter/redeliver", { ids: [jobId(1), "missing"] })).toEqual({
      status: 200,
      body: { redelivered: 1, skipped: [{ id: "missing", reason: "not in the dead-letter list" }] },
    });
    // Off the dead-letter list, on the retry schedule (due now), until the retry poll sends it.
    expect((await get("/-/webhooks/deadletter")).body).toMatchObject({ total: 1, deliveries: [{ id: jobId(2) }] });
    expect((await get("/-/webhooks/retries")).body).toMatchObject({
      total: 1,
      deliveries: [{ id: jobId(1), attempts: 0, url: "https://hooks.example.com/1", due_at: new Date(T0 + 3_600_000).toISOString() }],
    });

    await gw.runtime.runTaskNow("webhooks.retries");
    const deadline = Date.now() + 5000;
    while (sent.length < 3 || (await gw.kv.zcard("webhook:retries")) > 0) {
      if (Date.now() > deadline) throw new Error("the redelivery was not sent within 5 s");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const again = sent[2]!;
    expect(again.url).toBe("https://hooks.example.com/1");
    expect(again.body).toBe(original.body);
    const t = Math.floor((T0 + 3_600_000) / 1000);
    expect(again.headers.get("x-svc-signature")).toBe(await signatureHeader(SECRET, t, original.body));
    expect((await get("/-/webhooks/retries")).body).toMatchObject({ total: 0, deliveries: [] });
  });

  it("redelivers every dead letter without ids, and skips an old entry whose body is gone", async () => {
    await start();
    await deadLetter(1);
    // Written before entries kept their body, for a job no store knows any more.
    await gw.kv.push(
      "webhook:deadletter",
      JSON.stringify({
        job_id: jobId(9),
        service_type: "x",
        url: "https://hooks.example.com/9",
        attempts: 3,
        failed_at: "2026-01-01T00:00:00.000Z",
        last_error: "HTTP 502",
      }),
      "tail",
    );
    const { status, body } = await post("/-/webhooks/deadletter/redeliver", {});
    expect(status).toBe(200);
    expect(body).toEqual({ redelivered: 1, skipped: [{ id: jobId(9), reason: expect.stringMatching(/cannot be rebuilt/) }] });
    expect((await get("/-/webhooks/deadletter")).body).toMatchObject({ total: 1, deliveries: [{ id: jobId(9) }] });
  });

  it("answers 400 for bad input, saying what to fix", async () => {
    await start();
    const problems: Array<[Promise<{ status: number; body: Json }>, RegExp]> = [
      [get("/-/webhooks/deadletter?limit=x"), /"limit" must be a whole number/],
      [get("/-/webhooks/retries?offset=-2"), /"offset" must be a whole number/],
      [post("/-/webhooks/deadletter/redeliver", "[1"), /JSON/],
      [post("/-/webhooks/deadletter/redeliver", [1]), /must be a JSON object/],
      [post("/-/webhooks/deadletter/redeliver", { ids: [1] }), /"ids" must be a list of delivery ids/],
      [post("/-/webhooks/deadletter/redeliver", { ids: [] }), /"ids" is empty/],
    ];
    for (const [answer, message] of problems) {
      const { status, body } = await answer;
      expect(status).toBe(400);
      expect((body.error as Json).message).toMatch(message);
    }
  });
});

describe("webhook admin endpoints in the audit log", () => {
  it("writes an audit line for a redelivery with what it did", async () => {
    const lines: Json[] = [];
    const log = createLogger({ write: (line) => lines.push(JSON.parse(line) as Json) });
    const gw = await startTestRuntime("audit_log:\n  enabled: true\n", [auditLog, webhooks], { log });
    try {
      const response = await gw.request("/-/webhooks/deadletter/redeliver", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(await response.json()).toEqual({ redelivered: 0, skipped: [] });
      await gw.request("/-/webhooks/deadletter");
      const deadline = Date.now() + 2000;
      while (lines.filter((line) => line.event === "audit").length < 2) {
        if (Date.now() > deadline) throw new Error("no audit lines within 2 s");
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(lines.filter((line) => line.event === "audit")).toEqual([
        expect.objectContaining({ kind: "change", method: "POST", path: "/-/webhooks/deadletter/redeliver", status: 200, redelivered: 0 }),
        expect.objectContaining({ kind: "admin_read", method: "GET", path: "/-/webhooks/deadletter", status: 200 }),
      ]);
    } finally {
      await gw.close();
    }
  });
});
