/**
 * The delivery state machine against the embedded store and a scripted receiver, with the
 * clock driven by hand: what is sent, what is retried when, what is dead-lettered.
 */
import { createHmac } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { silentLogger } from "../../../core/log.ts";
import type { PinnedFetch } from "../../../core/plugins/types.ts";
import { Dispatcher, type DispatcherOptions, notificationBody, type TerminalJob } from "../../../plugins/webhooks/dispatcher.ts";
import { DEADLETTER_KEY, DeliveryQueue, type DeliveryRecord, RETRIES_KEY } from "../../../plugins/webhooks/queue.ts";

interface Sent {
  url: string;
  /** The addresses the attempt told the client to connect to. */
  addresses: readonly string[];
  init: RequestInit;
  headers: Headers;
  body: string;
}

/** A receiver answering from a script of statuses (or thrown errors); the last entry repeats. */
function scriptedFetch(script: Array<number | Error | "hang">) {
  const sent: Sent[] = [];
  const fetchFn: PinnedFetch = async (url, addresses, init = {}) => {
    sent.push({ url: String(url), addresses, init, headers: new Headers(init.headers), body: String(init.body) });
    const step = script[Math.min(sent.length - 1, script.length - 1)];
    if (step === "hang") {
      return await new Promise<Response>((_, reject) => init.signal?.addEventListener("abort", () => reject(init.signal?.reason)));
    }
    if (step instanceof Error) throw step;
    return new Response("receiver says hi", { status: step, headers: step >= 300 && step < 400 ? { location: "http://10.0.0.1/" } : {} });
  };
  return { fetchFn, sent };
}

const kvs: MemoryKv[] = [];
afterEach(async () => {
  for (const kv of kvs.splice(0)) await kv.close();
});

interface Setup {
  kv: MemoryKv;
  clock: ManualClock;
  dispatcher: Dispatcher;
  sent: Sent[];
  delivered: DeliveryRecord[];
  counts: { delivered: number; deadletter: number; depth: number };
  deadLetters(): Promise<Array<Record<string, unknown>>>;
  scheduled(): Promise<number | null>;
}

type Overrides = Partial<Omit<DispatcherOptions, "attempt">> & { attempt?: Partial<DispatcherOptions["attempt"]> };

function setup(script: Array<number | Error | "hang">, overrides: Overrides = {}, shared?: { kv: MemoryKv; clock: ManualClock }): Setup {
  const { attempt, ...options } = overrides;
  const clock = shared?.clock ?? new ManualClock(Date.UTC(2026, 0, 1));
  const kv = shared?.kv ?? new MemoryKv(clock);
  if (!shared) kvs.push(kv);
  const { fetchFn, sent } = scriptedFetch(script);
  const delivered: DeliveryRecord[] = [];
  const counts = { delivered: 0, deadletter: 0, depth: -1 };
  const dispatcher = new Dispatcher({
    queue: new DeliveryQueue(kv, 3_600_000),
    attempt: {
      fetchPinned: fetchFn,
      lookupHost: async (host) => (host === "hooks.example.com" ? ["93.184.216.34"] : host === "rebinds.example.com" ? ["127.0.0.1"] : []),
      allowPrivateNetworks: false,
      signingSecret: "whsec",
      timeoutMs: 200,
      now: () => clock.now(),
      ...attempt,
    },
    maxAttempts: 3,
    backoffMs: 30_000,
    maxBackoffMs: 40_000,
    leaseMs: 60_000,
    concurrency: 8,
    clock,
    log: silentLogger,
    onDelivered: async (record) => {
      delivered.push(record);
    },
    observe: {
      delivered: () => counts.delivered++,
      deadLettered: () => counts.deadletter++,
      depth: (value) => (counts.depth = value),
    },
    ...options,
  });
  return {
    kv,
    clock,
    dispatcher,
    sent,
    delivered,
    counts,
    deadLetters: async () => (await kv.lrange(DEADLETTER_KEY, 0, -1)).map((line) => JSON.parse(line) as Record<string, unknown>),
    scheduled: () => kv.zscore(RETRIES_KEY, "job-1"),
  };
}

const job = (overrides: Partial<TerminalJob> = {}): TerminalJob => ({
  jobId: "job-1",
  serviceType: "transcribe",
  status: "completed",
  result: { text: "hello" },
  completedAt: Date.UTC(2026, 0, 1, 0, 0, 5),
  callbackUrl: "https://hooks.example.com/done",
  ...overrides,
});

/** Moves the clock and runs one poll, waiting for the attempts it starts. */
async function tick(s: Setup, ms: number): Promise<void> {
  s.clock.advance(ms);
  await s.dispatcher.poll();
  await s.dispatcher.idle();
}

/**
 * Another process on the same store, whose attempt succeeds: it leaves the delivery alone while
 * the 60 s lease of the process that died lasts, and delivers it once the lease has run out.
 */
async function deliveredOnceTheLeaseRunsOut(shared: { kv: MemoryKv; clock: ManualClock }): Promise<Setup> {
  const next = setup([200], {}, shared);
  await tick(next, 59_999);
  expect(next.sent).toHaveLength(0);
  await tick(next, 1);
  expect(next.sent).toHaveLength(1);
  expect(next.counts.delivered).toBe(1);
  return next;
}

describe("webhook notification body (docs/design.md#webhook-body)", () => {
  it('has job_id, service_type, status, result, error ("" when none) and completed_at in ISO 8601', () => {
    expect(JSON.parse(notificationBody(job()))).toEqual({
      job_id: "job-1",
      service_type: "transcribe",
      status: "completed",
      result: { text: "hello" },
      error: "",
      completed_at: "2026-01-01T00:00:05.000Z",
    });
    expect(JSON.parse(notificationBody(job({ status: "failed", result: undefined, error: "backend said 500", completedAt: "2026-01-01T00:00:06.000Z" }))))
      .toEqual({
        job_id: "job-1",
        service_type: "transcribe",
        status: "failed",
        result: null,
        error: "backend said 500",
        completed_at: "2026-01-01T00:00:06.000Z",
      });
  });
});

describe("webhook dispatcher", () => {
  it("delivers inline with the spec headers and a verifiable signature, then forgets the delivery", async () => {
    const s = setup([200]);
    await s.dispatcher.dispatch(job());
    expect(s.sent).toHaveLength(1);
    const [request] = s.sent;
    expect(request.url).toBe("https://hooks.example.com/done");
    // The connection goes to what the check vetted, not to a fresh resolution of the name.
    expect(request.addresses).toEqual(["93.184.216.34"]);
    expect(request.init.method).toBe("POST");
    expect(request.init.redirect).toBe("manual");
    expect(request.headers.get("content-type")).toBe("application/json");
    expect(request.headers.get("x-job-id")).toBe("job-1");
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(request.headers.get("x-svc-signature") ?? "");
    expect(match).not.toBeNull();
    expect(Number(match![1])).toBe(Math.floor(s.clock.now() / 1000));
    expect(match![2]).toBe(createHmac("sha256", "whsec").update(`${match![1]}.${request.body}`).digest("hex"));
    expect(s.counts.delivered).toBe(1);
    expect(s.delivered.map((r) => r.job_id)).toEqual(["job-1"]);
    expect(await s.scheduled()).toBeNull();
    expect(await s.kv.get("webhook:delivery:job-1")).toBeNull();
  });

  it("sends no signature header without a signing secret", async () => {
    const s = setup([204], { attempt: { signingSecret: "" } });
    await s.dispatcher.dispatch(job());
    expect(s.sent).toHaveLength(1);
    expect(s.sent[0].headers.has("x-svc-signature")).toBe(false);
  });

  it.each([301, 302, 400, 404, 410, 499])("counts HTTP %i as delivered: no retry, redirects not followed", async (status) => {
    const s = setup([status]);
    await s.dispatcher.dispatch(job());
    await tick(s, 3_600_000);
    expect(s.sent).toHaveLength(1);
    expect(s.counts).toMatchObject({ delivered: 1, deadletter: 0 });
  });

  it("retries 5xx, network errors and timeouts on the backoff schedule with a fresh t, then delivers", async () => {
    const s = setup([503, new TypeError("fetch failed"), "hang", 200], { maxAttempts: 4 });
    await s.dispatcher.dispatch(job());
    const start = s.clock.now();
    expect(await s.scheduled()).toBe(start + 30_000);
    expect(JSON.parse((await s.kv.get("webhook:delivery:job-1"))!)).toMatchObject({ attempts: 1, last_error: "HTTP 503" });

    await tick(s, 29_999);
    expect(s.sent).toHaveLength(1);
    await tick(s, 1);
    expect(s.sent).toHaveLength(2);
    // Second retry: 30s doubled to 60s, capped at max_backoff 40s.
    expect(await s.scheduled()).toBe(start + 30_000 + 40_000);
    expect(JSON.parse((await s.kv.get("webhook:delivery:job-1"))!)).toMatchObject({ attempts: 2, last_error: "network error: fetch failed" });

    await tick(s, 40_000);
    expect(s.sent).toHaveLength(3);
    expect(JSON.parse((await s.kv.get("webhook:delivery:job-1"))!)).toMatchObject({ attempts: 3, last_error: "timed out after 200 ms" });

    await tick(s, 40_000);
    expect(s.sent).toHaveLength(4);
    await tick(s, 0);
    expect(s.counts).toMatchObject({ delivered: 1, deadletter: 0, depth: 0 });
    expect(new Set(s.sent.map((r) => r.body)).size).toBe(1);
    const stamps = s.sent.map((r) => /^t=(\d+)/.exec(r.headers.get("x-svc-signature") ?? "")![1]);
    expect(new Set(stamps).size).toBe(4);
  });

  it("dead-letters after max_retries attempts in total, the inline one included", async () => {
    const s = setup([500]);
    await s.dispatcher.dispatch(job());
    await tick(s, 30_000);
    await tick(s, 40_000);
    const failedAt = s.clock.now();
    await tick(s, 3_600_000);
    expect(s.sent).toHaveLength(3);
    expect(await s.deadLetters()).toEqual([
      {
        job_id: "job-1",
        service_type: "transcribe",
        url: "https://hooks.example.com/done",
        attempts: 3,
        failed_at: new Date(failedAt).toISOString(),
        last_error: "HTTP 500",
        // Kept for a redelivery: the job's status and the exact body that was sent.
        status: "completed",
        body: s.sent[0]!.body,
      },
    ]);
    expect(s.counts).toMatchObject({ delivered: 0, deadletter: 1, depth: 0 });
    expect(s.delivered).toEqual([]);
    expect(await s.kv.get("webhook:delivery:job-1")).toBeNull();
  });

  it("with max_retries 1 dead-letters right after the inline attempt", async () => {
    const s = setup([502], { maxAttempts: 1 });
    await s.dispatcher.dispatch(job());
    expect(s.sent).toHaveLength(1);
    expect(await s.deadLetters()).toMatchObject([{ attempts: 1, last_error: "HTTP 502" }]);
  });

  it("refuses a target that resolves to a private address at delivery time and dead-letters at once", async () => {
    const s = setup([200]);
    await s.dispatcher.dispatch(job({ callbackUrl: "https://rebinds.example.com/hook" }));
    expect(s.sent).toHaveLength(0);
    const [entry] = await s.deadLetters();
    expect(entry).toMatchObject({ attempts: 1 });
    expect(entry.last_error).toMatch(/rebinds\.example\.com \(127\.0\.0\.1\) is a loopback address/);
  });

  it("retries a name that does not resolve (a transient failure like a network error)", async () => {
    const s = setup([200]);
    await s.dispatcher.dispatch(job({ callbackUrl: "https://unknown.example.com/hook" }));
    expect(s.sent).toHaveLength(0);
    expect(await s.scheduled()).toBe(s.clock.now() + 30_000);
  });

  it("ignores a second notification of the same job while the first is pending", async () => {
    const s = setup([500, 200]);
    await s.dispatcher.dispatch(job());
    await s.dispatcher.dispatch(job());
    expect(s.sent).toHaveLength(1);
  });

  it("keeps the delivery leased during an attempt, so a process that dies mid-attempt leaves a retry behind", async () => {
    const clock = new ManualClock();
    const kv = new MemoryKv(clock);
    kvs.push(kv);
    // The first process never hears back (its attempt hangs until its timeout, then we drop it).
    const dying = setup([], { attempt: { fetchPinned: () => new Promise<Response>(() => {}), timeoutMs: 3_600_000 } }, { kv, clock });
    void dying.dispatcher.dispatch(job());
    await until(async () => (await kv.zscore(RETRIES_KEY, "job-1")) !== null);
    expect(await kv.zscore(RETRIES_KEY, "job-1")).toBe(clock.now() + 60_000);

    const survivor = await deliveredOnceTheLeaseRunsOut({ kv, clock });
    expect(JSON.parse(survivor.sent[0].body)).toMatchObject({ job_id: "job-1" });
  });

  it("a process that dies right after claiming a retry leaves it due again when the lease runs out", async () => {
    const clock = new ManualClock();
    const kv = new MemoryKv(clock);
    kvs.push(kv);
    // The inline attempt fails: a retry is scheduled 30 s later.
    const dying = setup([503], {}, { kv, clock });
    await dying.dispatcher.dispatch(job());
    expect(await kv.zscore(RETRIES_KEY, "job-1")).toBe(clock.now() + 30_000);
    // The process claims the due retry, then dies: every store command after the claim fails.
    const original = { run: kv.run.bind(kv), get: kv.get.bind(kv), zadd: kv.zadd.bind(kv), set: kv.set.bind(kv) };
    let dead = false;
    const died = () => Promise.reject(new Error("the process died here"));
    kv.run = (async (op, keys, args) => {
      if (dead) return await died();
      const reply = await original.run(op, keys, args);
      if (op.name === "claimDue" && Array.isArray(reply) && reply.length > 0) dead = true;
      return reply;
    }) as typeof kv.run;
    kv.get = (key) => (dead ? died() : original.get(key));
    kv.zadd = (key, score, member) => (dead ? died() : original.zadd(key, score, member));
    kv.set = (key, value, ttlMs) => (dead ? died() : original.set(key, value, ttlMs));
    await tick(dying, 30_000).catch(() => {});
    Object.assign(kv, original);
    expect(dying.sent).toHaveLength(1);
    expect(await kv.zscore(RETRIES_KEY, "job-1")).toBe(clock.now() + 60_000);

    await deliveredOnceTheLeaseRunsOut({ kv, clock });
    expect(await kv.zscore(RETRIES_KEY, "job-1")).toBeNull();
  });

  it("a process that dies between forgetting a delivered delivery's two keys leaves nothing behind for good", async () => {
    const clock = new ManualClock();
    const kv = new MemoryKv(clock);
    kvs.push(kv);
    // The first process delivers, then dies after the first of the two store commands that
    // forget the delivery (its record and its schedule entry).
    const dying = setup([503, 200], {}, { kv, clock });
    await dying.dispatcher.dispatch(job());
    const commands = { zrem: kv.zrem.bind(kv), del: kv.del.bind(kv) };
    let forgotten = 0;
    const dieOnSecond = <A extends unknown[], R>(command: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
      if (++forgotten === 2) throw new Error("the process died here");
      return await command(...args);
    };
    kv.zrem = dieOnSecond(commands.zrem);
    kv.del = dieOnSecond(commands.del);
    await tick(dying, 30_000).catch(() => {});
    expect(dying.sent).toHaveLength(2);
    kv.zrem = commands.zrem;
    kv.del = commands.del;

    // The next process finds what is left once the dead one's lease has run out, and clears it.
    const next = setup([200], {}, { kv, clock });
    await tick(next, 60_000);
    expect(next.sent).toHaveLength(0);
    expect(await kv.zscore(RETRIES_KEY, "job-1")).toBeNull();
    expect(await kv.get("webhook:delivery:job-1")).toBeNull();
  });

  it("a process that dies right after dead-lettering leaves no delivery to attempt or dead-letter again", async () => {
    const clock = new ManualClock();
    const kv = new MemoryKv(clock);
    kvs.push(kv);
    // The process dies at its first store command to forget the delivery once the entry is in the list.
    const dying = setup([502], { maxAttempts: 1 }, { kv, clock });
    const commands = { zrem: kv.zrem.bind(kv), del: kv.del.bind(kv) };
    const dieOnceDeadLettered = <A extends unknown[], R>(command: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
      if ((await kv.llen(DEADLETTER_KEY)) > 0) throw new Error("the process died here");
      return await command(...args);
    };
    kv.zrem = dieOnceDeadLettered(commands.zrem);
    kv.del = dieOnceDeadLettered(commands.del);
    await dying.dispatcher.dispatch(job()).catch(() => {});
    kv.zrem = commands.zrem;
    kv.del = commands.del;
    expect(dying.sent).toHaveLength(1);

    // The next process, once the dead one's lease has run out: nothing to claim.
    const next = setup([200], { maxAttempts: 1 }, { kv, clock });
    await tick(next, 60_000);
    expect(next.sent).toHaveLength(0);
    expect(await next.deadLetters()).toMatchObject([{ job_id: "job-1", attempts: 1, last_error: "HTTP 502" }]);
    expect(await kv.zscore(RETRIES_KEY, "job-1")).toBeNull();
    expect(await kv.get("webhook:delivery:job-1")).toBeNull();
  });

  it("two dispatchers on one store make each attempt once", async () => {
    const clock = new ManualClock();
    const kv = new MemoryKv(clock);
    kvs.push(kv);
    const a = setup([...Array<number>(20).fill(500), 200], {}, { kv, clock });
    const b = setup([200], {}, { kv, clock });
    for (let i = 0; i < 20; i++) await a.dispatcher.dispatch(job({ jobId: `job-${i}` }));
    clock.advance(30_000);
    await Promise.all([a.dispatcher.poll(), b.dispatcher.poll(), a.dispatcher.poll(), b.dispatcher.poll()]);
    await Promise.all([a.dispatcher.idle(), b.dispatcher.idle()]);
    const retried = [...a.sent.slice(20), ...b.sent].map((r) => r.headers.get("x-job-id"));
    expect(retried.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `job-${i}`).sort());
    expect(await kv.zcard(RETRIES_KEY)).toBe(0);
  });

  it("claims at most `concurrency` retries per poll and reports the queue depth", async () => {
    const s = setup([500], { concurrency: 2 });
    for (let i = 0; i < 5; i++) await s.dispatcher.dispatch(job({ jobId: `job-${i}` }));
    s.clock.advance(30_000);
    await s.dispatcher.poll();
    expect(s.counts.depth).toBe(5);
    await s.dispatcher.idle();
    expect(s.sent).toHaveLength(7);
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met within 2 s");
    await new Promise((r) => setTimeout(r, 5));
  }
}
