/**
 * A batch's life after validation, in-process on the memory store and on Redis, with the
 * clock driven by hand: a failing line is retried with backoff (a Retry-After honoured) up to
 * batches.max_attempts; a budget refusal fails its line at once with the refusal's body;
 * cancel starts no new line and ends `cancelled` with the rest listed; a batch past its window
 * starts no line and ends `expired` with its partial results; lines a dead process held are
 * run again once their lease lapses, and a line that ended is never run again; at most
 * batches.concurrency lines of a model run at once across processes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { BatchStore, parseEntry } from "../../../plugins/batches/batches/store.ts";
import { LINE_LEASE_MS } from "../../../plugins/batches/batches/worker.ts";
import { type HeldBackend, startHeldBackend } from "../../fixtures/held-backend.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { type ScriptedBackend, startScriptedBackend } from "../../fixtures/scripted-backend.ts";
import { type BatchRuntime, batchRuntime, chatLine, createBatch, drive, fileLines, ownRedis, STORES } from "./harness.ts";

const redisUrl = ownRedis();
let llm: FakeBackend;
let scripted: ScriptedBackend;
let held: HeldBackend;
beforeAll(async () => {
  [llm, scripted, held] = await Promise.all([startLlmBackend(), startScriptedBackend(), startHeldBackend()]);
});
afterAll(async () => {
  await Promise.all([llm.stop(), scripted.close(), held.close()]);
});

const service = (model: string, url: string) => `
  - type: chat
    model: ${model}
    provider: chat_completions
    inference_url: ${url}
    operations:
      chat: [/v1/chat/completions]`;

const config = (batches = "", extra = "") => `
server:
  consumer_header: X-Consumer
batches:
  enabled: true
  max_attempts: 3
  concurrency: 1
${batches}
${extra}
services:${service("chat-small", llm.url)}${service("scripted", scripted.url)}${service("held", held.url)}
`;

const alice = { "x-consumer": "alice" };
type Json = Record<string, unknown>;

describe.each(STORES)("batch lifecycle on the %s store", (store) => {
  let gw: BatchRuntime;
  let clock: ManualClock;
  const others: BatchRuntime[] = [];
  afterEach(async () => {
    for (const other of others.splice(0)) await other.close();
    await gw?.close();
    llm.received.length = 0;
    llm.failWith(undefined);
    scripted.script([]);
  });
  const start = async (yaml = config()) => {
    clock = new ManualClock(Date.UTC(2026, 5, 1));
    gw = await batchRuntime(yaml, { store, redisUrl, clock });
    return gw;
  };
  const get = async (id: string): Promise<Json> => (await gw.json(`/v1/batches/${id}`, { headers: alice })).body;
  const statusIs = (id: string, ...statuses: string[]) => async () => statuses.includes((await get(id)).status as string);

  it("retries a failing line with backoff, honouring Retry-After, then succeeds", async () => {
    await start();
    scripted.script([{ status: 429, headers: { "retry-after": "7" } }, { status: 502 }]);
    const id = (await createBatch(gw, [chatLine("r", "x", "scripted")], { headers: alice })).id as string;
    await drive(gw, async () => scripted.calls === 1);
    // Due in 7 s (the Retry-After), not before.
    clock.advance(6_000);
    await drive(gw, async () => true);
    expect(scripted.calls).toBe(1);
    clock.advance(1_000);
    await drive(gw, async () => scripted.calls === 2);
    // The second retry waits the backoff of a second attempt (2 s).
    clock.advance(2_000);
    await drive(gw, statusIs(id, "completed"));
    expect(scripted.calls).toBe(3);
    const output = await fileLines(gw, (await get(id)).output_file_id as string, alice);
    expect(output).toEqual([expect.objectContaining({ custom_id: "r", response: expect.objectContaining({ status_code: 200, body: { ok: true, call: 3 } }) })]);
  });

  it("fails a line after batches.max_attempts, with the last answer in the error file", async () => {
    await start();
    llm.failWith(503);
    const id = (await createBatch(gw, [chatLine("f", "x")], { headers: alice })).id as string;
    for (let i = 0; i < 3; i++) {
      await drive(gw, async () => llm.received.length === i + 1);
      clock.advance(10_000);
    }
    await drive(gw, statusIs(id, "completed"));
    const done = await get(id);
    expect(done).toMatchObject({ request_counts: { total: 1, completed: 0, failed: 1 }, output_file_id: null });
    expect(llm.received.length).toBe(3);
    const errors = await fileLines(gw, done.error_file_id as string, alice);
    expect(errors).toEqual([{
      id: expect.stringMatching(/^batch_req_/),
      custom_id: "f",
      response: { status_code: 503, request_id: expect.any(String), body: expect.objectContaining({ error: expect.anything() }) },
      error: null,
    }]);
  });

  it("fails a line refused by a token budget at once, with the refusal's body", async () => {
    await start(config("", `rate_limits:\n  chat:\n    "*": {token_rate: 20, token_period: 1h}`));
    const id = (await createBatch(gw, ["a", "b", "c"].map((c) => chatLine(c, c)), { headers: alice })).id as string;
    await drive(gw, statusIs(id, "completed"));
    const done = await get(id);
    // 18 tokens an answer: the first two pass (the budget counts after the answer), the third is refused.
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    expect(llm.received.length).toBe(2);
    const [refused] = await fileLines(gw, done.error_file_id as string, alice);
    expect(refused).toMatchObject({
      custom_id: "c",
      response: { status_code: 429, body: { error: { type: "rate_limit_error", message: expect.stringContaining("token") } } },
    });
  });

  it("cancel starts no new line, lets the running one finish, and lists the rest as cancelled", async () => {
    await start();
    held.hold();
    const arrivedBefore = held.arrived;
    const id = (await createBatch(gw, ["a", "b", "c"].map((c) => chatLine(c, c, "held")), { headers: alice })).id as string;
    await gw.runtime.runTaskNow("batches.sweep");
    await gw.api.use("batches").idle();
    void gw.runtime.runTaskNow("batches.lines");
    const deadline = Date.now() + 10_000;
    while (held.waiting < 1 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    const cancelling = await gw.json(`/v1/batches/${id}/cancel`, { method: "POST", headers: alice });
    expect(cancelling.body).toMatchObject({ status: "cancelling", cancelling_at: expect.any(Number) });
    held.release();
    await drive(gw, statusIs(id, "cancelled"));
    const done = await get(id);
    expect(done).toMatchObject({ status: "cancelled", cancelled_at: expect.any(Number), request_counts: { total: 3, completed: 1, failed: 0 } });
    expect(held.arrived - arrivedBefore).toBe(1);
    expect((await fileLines(gw, done.output_file_id as string, alice)).map((l) => l.custom_id)).toEqual(["a"]);
    const cancelled = await fileLines(gw, done.error_file_id as string, alice);
    expect(cancelled.map((l) => [l.custom_id, (l.error as { code: string }).code, l.response])).toEqual([["b", "batch_cancelled", null], [
      "c",
      "batch_cancelled",
      null,
    ]]);
    // Cancelling again answers the batch as it is; a completed batch cannot be cancelled.
    expect((await gw.json(`/v1/batches/${id}/cancel`, { method: "POST", headers: alice })).body.status).toBe("cancelled");
  });

  it("a batch past its window starts no line and ends expired with its partial results", async () => {
    await start();
    const id = (await createBatch(gw, ["a", "b"].map((c) => chatLine(c, c)), { headers: alice })).id as string;
    await gw.runtime.runTaskNow("batches.sweep");
    await gw.api.use("batches").idle();
    expect((await get(id)).status).toBe("in_progress");
    // One line ran before the window ended (a process took it: claimed and answered here).
    const lines = new BatchStore(gw.kv);
    const claim = await lines.claim("chat-small", { now: clock.now(), leaseMs: LINE_LEASE_MS, token: "t", limit: 1 });
    expect(claim.kind).toBe("line");
    if (claim.kind !== "line") return;
    await lines.finish("chat-small", claim.member, parseEntry(claim.entry), true, `o${JSON.stringify({ custom_id: "a", response: { status_code: 200 } })}`);
    clock.advance(24 * 3_600_000);
    await drive(gw, statusIs(id, "expired"));
    const done = await get(id);
    expect(done).toMatchObject({ status: "expired", expired_at: expect.any(Number), request_counts: { total: 2, completed: 1, failed: 0 } });
    expect(llm.received).toEqual([]);
    expect((await fileLines(gw, done.output_file_id as string, alice)).map((l) => l.custom_id)).toEqual(["a"]);
    const expired = await fileLines(gw, done.error_file_id as string, alice);
    expect(expired).toEqual([{
      id: expect.any(String),
      custom_id: "b",
      response: null,
      error: { code: "batch_expired", message: expect.stringContaining("completion window") },
    }]);
  });

  it("runs again the lines a dead process held once their lease lapses; an ended line never runs again", async () => {
    await start(config("", "").replace("concurrency: 1", "concurrency: 5"));
    const id = (await createBatch(gw, ["a", "b", "c"].map((c) => chatLine(c, c)), { headers: alice })).id as string;
    await gw.runtime.runTaskNow("batches.sweep");
    await gw.api.use("batches").idle();
    // A process takes "a" and dies; another takes "b", dies, but its answer is recorded late (a zombie).
    const dead = new BatchStore(gw.kv);
    const take = async () => {
      const claim = await dead.claim("chat-small", { now: clock.now(), leaseMs: LINE_LEASE_MS, token: crypto.randomUUID().slice(0, 8), limit: 5 });
      if (claim.kind !== "line") throw new Error(`no line to take: ${claim.kind}`);
      return claim;
    };
    const a = await take();
    const b = await take();
    await drive(gw, async () => (await get(id)).request_counts !== undefined && ((await get(id)).request_counts as Json).completed === 1);
    expect((await get(id)).status).toBe("in_progress");
    clock.advance(LINE_LEASE_MS + 1);
    await gw.runtime.runTaskNow("batches.sweep");
    await gw.api.use("batches").idle();
    // The zombie's answer for "b" arrives after its lease lapsed and the line was requeued: it counts, once.
    await dead.finish(
      "chat-small",
      b.member,
      parseEntry(b.entry),
      true,
      `o${JSON.stringify({ custom_id: "b", response: { status_code: 200, body: "zombie" } })}`,
    );
    await drive(gw, statusIs(id, "completed"));
    const output = await fileLines(gw, (await get(id)).output_file_id as string, alice);
    expect(output.map((l) => l.custom_id).sort()).toEqual(["a", "b", "c"]);
    // "a" ran here once its lease lapsed; "b" never ran again; "c" ran once.
    expect(llm.received.map((r) => (r.body as { messages: Array<{ content: string }> }).messages[0].content).sort()).toEqual(["a", "c"]);
    expect(a.kind).toBe("line");
  });

  it("runs at most batches.concurrency lines of a model at once, across processes", async () => {
    await start(config("", ""));
    const yaml = config("", "").replace("concurrency: 1", "concurrency: 2");
    await gw.close();
    clock = new ManualClock(Date.UTC(2026, 5, 1));
    gw = await batchRuntime(yaml, { store, redisUrl, clock });
    const second = await batchRuntime(yaml, { store, redisUrl, clock, objects: gw.objects, ...(store === "memory" ? { kv: gw.kv } : { keepData: true }) });
    others.push(second);
    held.hold();
    const id = (await createBatch(gw, ["a", "b", "c", "d", "e"].map((c) => chatLine(c, c, "held")), { headers: alice })).id as string;
    await gw.runtime.runTaskNow("batches.sweep");
    await gw.api.use("batches").idle();
    const before = held.arrived;
    for (let round = 0; round < 5; round++) {
      await Promise.all([gw.runtime.runTaskNow("batches.lines"), second.runtime.runTaskNow("batches.lines")]);
      const deadline = Date.now() + 5_000;
      while (held.waiting < 2 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
      expect(held.waiting).toBe(2);
    }
    expect(held.arrived - before).toBe(2);
    held.release();
    // A connection the held backend dropped is retried: the clock moves past the retry.
    await drive(gw, statusIs(id, "completed"), { advance: { clock, byMs: 2_000 } });
    await second.api.use("batches").idle();
    expect((await get(id)).request_counts).toEqual({ total: 5, completed: 5, failed: 0 });
  });
});
