/**
 * Reliability, scenario 5: two gateway replicas on one Redis (database 13, flushed first) and
 * one s3rver, then the same on the suite's Sentinel set (database 13) and on a Redis Cluster of
 * the file's own (test/support/scenario-redis.ts), each topology with fresh backends. Each
 * replica has its embedded relay, the test alternating between them for 5 seconds
 * (RELIABILITY_REPLICAS_SECONDS) with mixed traffic, all at once:
 *
 * - sync bursts at a model with `max_concurrent_sync: 3` (docs/design.md#sync-concurrency-cap): the
 *   backend, run in this process, records how many requests it held at once, which must never
 *   exceed 3;
 * - request-rate rounds (docs/design.md#request-rate, `rate: 10` per window): each round a fresh
 *   consumer sends 20 requests split over both replicas at once, and exactly 10 may pass;
 * - LLM chat completions, async job submissions (some as pairs with one Idempotency-Key sent
 *   to both replicas at once, docs/design.md#idempotency: one job, one backend run, the same
 *   answer), and admin reads (/health, /metrics, /v1/models, /usage, /-/usage, /jobs);
 * - four times in the run (every 10 seconds in runs of 40 s or more) replica A's config file is
 *   rewritten and A reloaded (`POST /-/reload`, docs/design.md#hot-reload), which must not disturb
 *   B.
 *
 * Any answer outside what the spec allows for its request is an error; there must be none.
 * At the end, read from the stores: every accepted job is stored once and completed with its
 * own result, each ran once at the backend, and nothing else was created.
 *
 * 5 seconds per topology is what CI runs: every kind of traffic runs many rounds (a rate
 * round, a sync burst and an idempotent pair each take well under a second: about a hundred
 * rate rounds and twenty idempotent pairs per topology), and four reloads fall among them, so
 * each property is checked many times over. (It was 15 s: a third of the suite's CPU time
 * went into this file's traffic, 100 CPU s, for the same properties.) A longer run
 * (RELIABILITY_REPLICAS_SECONDS=60, the length of the published figures in
 * docs/reliability.md) adds rounds, not properties: more chances for a rare interleaving (a
 * reload between a limit check and its count, two replicas' idempotent claims on the same
 * millisecond) and a minute of steady traffic on each replica's connections and memory.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend as EchoBackend, startBackend } from "../fixtures/http-backend.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type FakeBackend as LlmBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { reportReliability } from "../support/reliability-report.ts";
import { openScenarioRedis, REDIS_TOPOLOGIES, type ScenarioRedis } from "../support/scenario-redis.ts";
import { storesYaml } from "../support/stores-yaml.ts";

const DB = 13;
const BUCKET = "reliability-replicas";
const SECONDS = Number(process.env.RELIABILITY_REPLICAS_SECONDS ?? 5);
const CAP = 3;
const BURST = 6;
const RATE = 10;
/** At least four reloads in a short run; one every 10 s in a long one. */
const RELOAD_EVERY_MS = Math.min(10_000, (SECONDS * 1000) / 4);
/** Reloads of replica A during the run, at least (one after another, on a config each): all but one that fit. */
const MIN_RELOADS = Math.max(1, Math.floor(SECONDS / (RELOAD_EVERY_MS / 1000)) - 1);

/** A sync backend that answers after a short delay and remembers the most requests it held at once. */
interface CountingBackend {
  url: string;
  readonly calls: number;
  readonly maxInFlight: number;
  close(): Promise<void>;
}

async function startCountingBackend(delayMs: number): Promise<CountingBackend> {
  let inFlight = 0;
  let maxInFlight = 0;
  let calls = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    calls++;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let done = false;
    const leave = () => {
      if (!done) inFlight--;
      done = true;
    };
    res.on("close", leave);
    req.resume();
    req.on("end", () =>
      setTimeout(() => {
        const text = JSON.stringify({ n: calls });
        leave();
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
      }, delayMs));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get calls() {
      return calls;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function isErrorBody(text: string): boolean {
  try {
    const { error } = JSON.parse(text) as { error?: { message?: unknown; type?: unknown } };
    return typeof error?.message === "string" && error.message !== "" && typeof error.type === "string";
  } catch {
    return false;
  }
}

type Replica = "A" | "B";
interface Outcome {
  replica: Replica;
  kind: string;
  status: number;
  detail?: string;
}

describe.each(REDIS_TOPOLOGIES)("scenario 5: two replicas on $name", ({ topology }) => {
  let capped: CountingBackend;
  let echo: EchoBackend;
  let llm: LlmBackend;
  let inference: InferenceBackend;
  let store: ScenarioRedis;
  const running: GatewayProcess[] = [];

  beforeAll(async () => {
    [capped, echo, llm, inference, store] = await Promise.all([
      startCountingBackend(40),
      startBackend({ kind: "echo" }),
      startLlmBackend(),
      startInferenceBackend(),
      openScenarioRedis(topology, DB),
    ]);
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill()));
    await Promise.all([store?.close(), capped?.close(), echo?.close(), llm?.stop(), inference?.close()]);
  });

  /** The replicas' config; `extra` adds a service, so a reload has something to change. */
  function config(extra?: string): string {
    return `
server:
  consumer_header: X-Consumer
${storesYaml({ bucket: BUCKET, redisYaml: store.yaml })}
relay:
  embedded: true
  concurrency: 2
lifecycle:
  persists_result: true
rate_limits:
  limited:
    "*": { rate: ${RATE}, period: 1m }
services:
  - type: work
    model: capped
    inference_url: ${capped.url}
    operations: { run: [/v1/work] }
    max_concurrent_sync: ${CAP}
  - type: limited
    model: limited
    inference_url: ${echo.url}
    operations: { run: [/v1/limited] }
  - type: chat
    model: chat-fake
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
  - type: transcription
    model: whisper
    inference_url: ${inference.url}
    operations: { transcribe: [/transcribe] }
${
      extra
        ? `  - type: ${extra}
    model: ${extra}
    inference_url: ${echo.url}
    operations: { run: [/v1/${extra}] }
`
        : ""
    }`;
  }

  it("enforces limits across both, keeps idempotency, reloads one without disturbing the other, loses nothing", async () => {
    const [a, b] = await Promise.all([startGateway(config()), startGateway(config())]);
    running.push(a, b);
    const replicas: Record<Replica, GatewayProcess> = { A: a, B: b };
    const pick = (i: number): Replica => (i % 2 === 0 ? "A" : "B");

    const outcomes: Outcome[] = [];
    const errors: Outcome[] = [];
    /** Sends one request; an answer outside `allowed` (or no answer) is an error. Resolves with status and body. */
    const send = async (
      replica: Replica,
      kind: string,
      path: string,
      init: RequestInit,
      allowed: number[],
    ): Promise<{ status: number; body: string; headers: Headers }> => {
      let status = 0;
      let body = "";
      let headers = new Headers();
      try {
        const response = await fetch(`${replicas[replica].url}${path}`, init);
        body = await response.text();
        status = response.status;
        headers = response.headers;
      } catch (error) {
        body = String(error);
      }
      const outcome: Outcome = { replica, kind, status };
      outcomes.push(outcome);
      if (!allowed.includes(status) || (status >= 400 && !isErrorBody(body))) errors.push({ ...outcome, detail: body.slice(0, 300) });
      return { status, body, headers };
    };
    const json = (consumer: string, body: unknown): RequestInit => ({
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": consumer },
      body: JSON.stringify(body),
    });

    const deadline = Date.now() + SECONDS * 1000;
    const more = () => Date.now() < deadline;

    // Sync concurrency cap: bursts of 6 at a cap of 3, half to each replica.
    const cap = { ok: 0, busy: 0 };
    const cappedTraffic = (async () => {
      for (let burst = 0; more(); burst++) {
        const statuses = await Promise.all(
          Array.from({ length: BURST }, (_, i) => send(pick(burst + i), "sync-capped", "/v1/work", json("capped", { model: "capped", i }), [200, 503])),
        );
        for (const { status } of statuses) status === 200 ? cap.ok++ : cap.busy++;
      }
    })();

    // Request rate: per round, a fresh consumer's window; 2 x RATE requests at once over both replicas.
    const rounds: number[] = [];
    const rateTraffic = (async () => {
      for (let round = 0; more(); round++) {
        const answers = await Promise.all(
          Array.from({ length: 2 * RATE }, (_, i) => send(pick(i), "rate", "/v1/limited", json(`rate-${round}`, { model: "limited", i }), [200, 429])),
        );
        answers.forEach((answer, i) => {
          const retryAfter = Number(answer.headers.get("retry-after"));
          if (answer.status === 429 && !(retryAfter >= 1 && retryAfter <= 60)) {
            errors.push({ replica: pick(i), kind: "rate", status: 429, detail: `Retry-After ${answer.headers.get("retry-after")}` });
          }
        });
        rounds.push(answers.filter((x) => x.status === 200).length);
      }
    })();

    // LLM: each request's own text comes back.
    let chats = 0;
    const llmTraffic = (async () => {
      for (let i = 0; more(); i++) {
        const text = `hello ${i}`;
        const answer = await send(
          pick(i),
          "llm",
          "/v1/chat/completions",
          json("chatter", { model: "chat-fake", messages: [{ role: "user", content: text }] }),
          [200],
        );
        chats++;
        if (
          answer.status === 200 &&
          (JSON.parse(answer.body) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content !== `echo: ${text}`
        ) {
          errors.push({ replica: pick(i), kind: "llm", status: 200, detail: `wrong answer ${answer.body.slice(0, 200)}` });
        }
      }
    })();

    // Async jobs; every 4th is a pair with one Idempotency-Key sent to both replicas at once, then once more.
    const accepted = new Map<string, string>(); // job id -> content
    const pairs: Array<{ key: string; content: string; answers: Array<{ status: number; jobId: string; replay: string | null }> }> = [];
    const form = (content: string) => {
      const body = new FormData();
      body.append("file", new Blob([content], { type: "audio/wav" }), "clip.wav");
      return body;
    };
    const submit = async (replica: Replica, content: string, key?: string, allowed = [202]) => {
      const headers: Record<string, string> = { "x-consumer": "jobs", ...(key ? { "idempotency-key": key } : {}) };
      const answer = await send(replica, key ? "async-idempotent" : "async", "/jobs/transcription", { method: "POST", body: form(content), headers }, allowed);
      const jobId = answer.status === 200 || answer.status === 202 ? (JSON.parse(answer.body) as { job_id: string }).job_id : "";
      return { status: answer.status, jobId, replay: answer.headers.get("x-idempotent-replay") };
    };
    const asyncTraffic = (async () => {
      for (let i = 0; more(); i++) {
        const content = `job-${i}`;
        if (i % 4 === 3) {
          const key = `key-${i}`;
          const both = await Promise.all([submit("A", content, key, [200, 202]), submit("B", content, key, [200, 202])]);
          const again = await submit(pick(i), content, key, [200]);
          pairs.push({ key, content, answers: [...both, again] });
          for (const answer of [...both, again]) if (answer.jobId) accepted.set(answer.jobId, content);
        } else {
          const answer = await submit(pick(i), content);
          if (answer.jobId) accepted.set(answer.jobId, content);
        }
      }
    })();

    // Admin reads on both; every RELOAD_EVERY_MS replica A gets a new config file and a reload.
    const reloads: Array<{ at: number; extra: string }> = [];
    const adminTraffic = (async () => {
      let nextReload = Date.now() + RELOAD_EVERY_MS / 2;
      const reads: Array<[string, Record<string, string>]> = [
        ["/health", {}],
        ["/metrics", {}],
        ["/v1/models", {}],
        ["/usage", { "x-consumer": "jobs" }],
        ["/-/usage?limit=5", {}],
        ["/jobs?service_type=transcription", { "x-consumer": "jobs" }],
      ];
      // On a loaded machine a reload takes long enough that fewer fit in the traffic's time:
      // the admin traffic goes on until MIN_RELOADS are done.
      for (let i = 0; more() || reloads.length < MIN_RELOADS; i++) {
        if (Date.now() >= nextReload) {
          const extra = `extra-${reloads.length + 1}`;
          a.writeConfig(config(extra));
          await send("A", "reload", "/-/reload", { method: "POST" }, [200]);
          reloads.push({ at: Date.now(), extra });
          nextReload = Date.now() + RELOAD_EVERY_MS;
        }
        const [path, headers] = reads[i % reads.length];
        await send(pick(i), "admin", path, { headers }, [200]);
      }
    })();

    await Promise.all([cappedTraffic, rateTraffic, llmTraffic, asyncTraffic, adminTraffic]);
    const storeLog = (gw: GatewayProcess) =>
      gw.output().split("\n").filter((line) => line.includes("kv_store") || line.includes("store_error")).slice(-20).join("\n");
    expect(errors, `A:\n${storeLog(a)}\nB:\n${storeLog(b)}`).toEqual([]);

    // The reload took on A, and B, never reloaded, still has its own config.
    const models = async (gw: GatewayProcess) => ((await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
    const lastExtra = reloads.at(-1)?.extra;
    expect(reloads.length).toBeGreaterThanOrEqual(MIN_RELOADS);
    expect(await models(a)).toContain(lastExtra);
    expect(await models(b)).not.toContain(lastExtra);

    // Sync cap: reached (503s) and never exceeded across both replicas; refused requests never reached the backend.
    expect(cap.busy).toBeGreaterThan(0);
    expect(capped.maxInFlight).toBeLessThanOrEqual(CAP);
    expect(capped.calls).toBe(cap.ok);
    // Request rate: exactly RATE per window, whichever replica answered.
    expect(rounds.length).toBeGreaterThan(0);
    expect(rounds.filter((allowed) => allowed !== RATE)).toEqual([]);
    expect(echo.requests.filter((r) => r.path === "/v1/limited").length).toBe(rounds.length * RATE);
    // LLM: one backend call per request.
    expect(llm.calls("/v1/chat/completions").length).toBe(chats);

    // Idempotency across replicas: one job, the same answer, one 202 and replays.
    expect(pairs.length).toBeGreaterThan(0);
    for (const pair of pairs) {
      const ids = new Set(pair.answers.map((answer) => answer.jobId));
      expect(ids.size, JSON.stringify(pair)).toBe(1);
      expect(pair.answers.map((answer) => answer.status).sort()).toEqual([200, 200, 202]);
      for (const answer of pair.answers) expect(answer.replay).toBe(answer.status === 200 ? "true" : null);
    }

    // Every accepted job is stored once and completes with its own result; each ran once.
    const ids = [...accepted.keys()];
    let left = ids;
    await waitUntil(
      async () => {
        const statuses = await Promise.all(left.map((id) => store.kv.hget(`job:${id}`, "status")));
        left = left.filter((_, i) => statuses[i] !== "completed");
        return left.length === 0;
      },
      60_000,
      () => `${left.length} of ${ids.length} jobs not completed:\n${a.output().slice(-1500)}\n${b.output().slice(-1500)}`,
    );
    expect((await store.keys("job:")).filter((key) => /^job:[0-9a-f-]{36}$/.test(key)).sort()).toEqual(ids.map((id) => `job:${id}`).sort());
    for (const [i, [id, content]] of [...accepted].entries()) {
      const response = await fetch(`${replicas[pick(i)].url}/jobs/transcription/${id}`);
      expect(await response.json()).toMatchObject({ id, status: "completed", result: { content } });
      expect(inference.runs.get(content), content).toBe(1);
    }
    expect(inference.received.length).toBe(accepted.size);
    expect(await store.kv.llen("relay:whisper")).toBe(0);
    expect(await store.kv.llen("relay:whisper:processing")).toBe(0);
    expect([a.child.exitCode, b.child.exitCode]).toEqual([null, null]);

    const count = (kind: string) => outcomes.filter((o) => o.kind === kind).length;
    reportReliability({
      id: 5,
      scenario: "Two replicas sharing Redis",
      redis: topology,
      load: `${SECONDS}s of mixed sync, LLM, async (idempotent pairs over both) and admin requests, alternating replicas`,
      faults: `replica A's config rewritten and reloaded ${reloads.length}x under load`,
      requests: outcomes.length,
      lost: 0,
      duplicated: 0,
      errors: errors.length,
      expectedErrors: { count: cap.busy + rounds.length * RATE, why: "503 at the sync cap, 429 past the rate limit, both enforced across replicas" },
      details: {
        sync_capped: count("sync-capped"),
        max_in_flight: capped.maxInFlight,
        rate_rounds: rounds.length,
        llm: count("llm"),
        jobs: accepted.size,
        idempotent_pairs: pairs.length,
        admin: count("admin"),
        replica_b_requests: outcomes.filter((o) => o.replica === "B").length,
      },
    });
  }, (SECONDS + 120) * 1000);
});
