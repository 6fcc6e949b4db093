/**
 * The queues' admin endpoints on both stores (memory, and the suite's redis-server on
 * database 30, which test/plugins/webhooks/deadletters.test.ts shares: each file clears
 * only its own keys before each test): `GET /-/queues`, `GET /-/relay/deadletter` with
 * pagination and `POST /-/relay/deadletter/discard`, the 400s for bad input, and the audit
 * line of a discard. Jobs are
 * submitted through the API; a dead letter is made as the GC reaper makes one (the job
 * failed with its error, its id on `relay:<model>:deadletter`).
 */
import { afterEach, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { createLogger } from "../../../core/log.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import auditLog from "../../../plugins/audit-log/index.ts";
import asyncJobs from "../../../plugins/async-jobs/index.ts";
import { clearRedisKeys } from "../../support/redis-keys.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";
import { jobForm } from "./harness.ts";

const DB = 30;
const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);

const yaml = `
services:
  - type: transcription
    model: whisper
    inference_url: http://127.0.0.1:9
  - type: ocr
    model: reader
    inference_url: http://127.0.0.1:9
`;

type Json = Record<string, unknown>;

const stores: Array<{ name: string; open: () => Promise<KvStore | undefined> }> = [
  { name: "memory", open: async () => undefined },
  {
    name: "redis",
    open: async () => {
      await clearRedisKeys(inject("redisUrl"), DB, ["job:*", "job-expired:*", "job-cancel:*", "jobs:*", "relay:*", "relay-lease:*", "relay-retry:*"]);
      return await RedisKv.connect({ url: inject("redisUrl"), db: DB });
    },
  },
];

describe.each(stores)("queue admin endpoints: $name", ({ open }) => {
  let gw: TestRuntime;
  let redis: KvStore | undefined;
  let clock: ManualClock;
  afterEach(async () => {
    await gw?.close();
    await redis?.close();
  });

  async function start(): Promise<void> {
    clock = new ManualClock(T0);
    redis = await open();
    gw = await startTestRuntime(yaml, [asyncJobs], { clock, kv: redis, objects: "files" });
  }

  async function submit(type: string): Promise<string> {
    const response = await gw.request(`/jobs/${type}`, { method: "POST", body: jobForm({}, { name: "a.wav", content: "abc" }) });
    expect(response.status).toBe(202);
    return ((await response.json()) as { job_id: string }).job_id;
  }

  /** As the GC reaper does it: the job fails with its error and its id joins the dead-letter list. */
  async function deadLetter(model: string, error: string): Promise<string> {
    const id = await submit(model === "whisper" ? "transcription" : "ocr");
    const jobs = gw.api.use("jobs");
    const claim = await jobs.claim(model, 60_000);
    expect(claim?.id).toBe(id);
    const job = await jobs.get(id);
    await jobs.finish(claim!, job!, "failed", { error });
    await gw.kv.push(jobs.keys.deadletter(model), id, "tail");
    return id;
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

  it("GET /-/queues: pending, processing, dead letters and the oldest pending age per model", async () => {
    await start();
    await submit("transcription");
    clock.advance(90_000);
    await submit("transcription");
    await gw.api.use("jobs").claim("whisper", 60_000); // the first one now runs
    await deadLetter("reader", "backend answered 500 three times");
    // A model removed from the config that still has a dead letter is listed after the configured ones.
    await gw.kv.push(gw.api.use("jobs").keys.deadletter("retired"), "old-id", "tail");
    clock.advance(30_000);
    const { status, body } = await get("/-/queues");
    expect(status).toBe(200);
    expect(body).toEqual({
      queues: [
        { model: "whisper", pending: 1, processing: 1, deadletter: 0, oldest_pending_age_seconds: 30 },
        { model: "reader", pending: 0, processing: 0, deadletter: 1, oldest_pending_age_seconds: null },
        { model: "retired", pending: 0, processing: 0, deadletter: 1, oldest_pending_age_seconds: null },
      ],
    });
  });

  it("GET /-/relay/deadletter lists each job with its error, per model or all, a page at a time", async () => {
    await start();
    const a = await deadLetter("whisper", "error a");
    const b = await deadLetter("whisper", "error b");
    const c = await deadLetter("reader", "error c");

    const whisper = await get("/-/relay/deadletter?model=whisper");
    expect(whisper.status).toBe(200);
    expect(whisper.body).toMatchObject({ total: 2, limit: 20, offset: 0 });
    expect(whisper.body.jobs).toEqual([
      expect.objectContaining({ job_id: a, model: "whisper", error: "error a", status: "failed", service_type: "transcription" }),
      expect.objectContaining({ job_id: b, model: "whisper", error: "error b" }),
    ]);

    const page = await get("/-/relay/deadletter?limit=2&offset=1");
    expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 1 });
    expect((page.body.jobs as Json[]).map((j) => [j.job_id, j.model, j.error])).toEqual([
      [b, "whisper", "error b"],
      [c, "reader", "error c"],
    ]);
    expect((await get("/-/relay/deadletter?offset=3")).body).toMatchObject({ total: 3, jobs: [] });

    // A model removed from the config stays readable and discardable while it has dead letters.
    await gw.kv.push(gw.api.use("jobs").keys.deadletter("retired"), "old-id", "tail");
    expect((await get("/-/relay/deadletter?model=retired")).body).toMatchObject({
      total: 1,
      jobs: [{ job_id: "old-id", model: "retired", status: "expired" }],
    });
    expect(await post("/-/relay/deadletter/discard", { model: "retired" })).toEqual({ status: 200, body: { model: "retired", discarded: 1 } });
    expect((await get("/-/relay/deadletter?model=retired")).status).toBe(404);

    // A job whose record expired is still listed, by its id.
    await gw.kv.del(gw.api.use("jobs").keys.record(c));
    expect((await get("/-/relay/deadletter?model=reader")).body.jobs).toEqual([{ job_id: c, model: "reader", error: "", status: "expired" }]);
  });

  it("POST /-/relay/deadletter/discard takes the named jobs, or all of the model, off the list", async () => {
    await start();
    const a = await deadLetter("whisper", "error a");
    const b = await deadLetter("whisper", "error b");
    await deadLetter("reader", "error c");

    expect(await post("/-/relay/deadletter/discard", { model: "whisper", ids: [a, "not-there"] })).toEqual({
      status: 200,
      body: { model: "whisper", discarded: 1 },
    });
    expect((await get("/-/relay/deadletter?model=whisper")).body.jobs).toEqual([expect.objectContaining({ job_id: b })]);

    expect(await post("/-/relay/deadletter/discard", { model: "whisper" })).toEqual({ status: 200, body: { model: "whisper", discarded: 1 } });
    expect((await get("/-/queues")).body.queues).toEqual([
      expect.objectContaining({ model: "whisper", deadletter: 0 }),
      expect.objectContaining({ model: "reader", deadletter: 1 }),
    ]);
  });

  it("answers 400 for bad input and 404 for an unknown model, saying what to fix", async () => {
    await start();
    const problems: Array<[Promise<{ status: number; body: Json }>, number, RegExp]> = [
      [get("/-/relay/deadletter?limit=0"), 400, /"limit" must be a whole number of at least 1/],
      [get("/-/relay/deadletter?offset=-1"), 400, /"offset" must be a whole number/],
      [get("/-/relay/deadletter?model=nope"), 404, /no queue for model "nope"; the models with queues are: whisper, reader/],
      [post("/-/relay/deadletter/discard", {}), 400, /needs "model"/],
      [post("/-/relay/deadletter/discard", "not json"), 400, /JSON/],
      [post("/-/relay/deadletter/discard", { model: "whisper", ids: "abc" }), 400, /"ids" must be a list of job ids/],
      [post("/-/relay/deadletter/discard", { model: "whisper", ids: [] }), 400, /"ids" is empty/],
      [post("/-/relay/deadletter/discard", { model: "nope" }), 404, /no queue for model "nope"/],
    ];
    for (const [answer, status, message] of problems) {
      const { status: got, body } = await answer;
      expect(got).toBe(status);
      expect((body.error as Json).message).toMatch(message);
      expect((body.error as Json).type).toEqual(expect.any(String));
    }
  });
});

describe("queue admin endpoints in the audit log", () => {
  it("writes an audit line for a discard with the model and how many it discarded", async () => {
    const lines: Json[] = [];
    const log = createLogger({ write: (line) => lines.push(JSON.parse(line) as Json) });
    const gw = await startTestRuntime(`audit_log:\n  enabled: true\n${yaml}`, [auditLog, asyncJobs], { log, objects: "files" });
    try {
      await gw.kv.push(gw.api.use("jobs").keys.deadletter("whisper"), "dead-id", "tail");
      const response = await gw.request("/-/relay/deadletter/discard", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "whisper" }),
      });
      expect(await response.json()).toEqual({ model: "whisper", discarded: 1 });
      const audit = () => lines.filter((line) => line.event === "audit");
      for (const deadline = Date.now() + 2000; audit().length < 1; await new Promise((resolve) => setTimeout(resolve, 5))) {
        if (Date.now() > deadline) throw new Error("no audit line within 2 s");
      }
      expect(audit()).toEqual([
        expect.objectContaining({
          kind: "change",
          method: "POST",
          path: "/-/relay/deadletter/discard",
          status: 200,
          outcome: "success",
          model: "whisper",
          discarded: 1,
        }),
      ]);
    } finally {
      await gw.close();
    }
  });
});
