/**
 * What a client may rely on once it has read its whole answer
 * (docs/design.md#a-finished-answer-is-settled): the sync concurrency slot it held is free, and its
 * request shows in `GET /usage`. A client that reads its answers and at once sends the next request
 * must never meet its own finished request: repeated many times, on the embedded store and on Redis
 * (database 18, flushed when the file starts), for a non-streaming LLM answer, a streamed LLM
 * answer, and direct-proxy answers (a small one the gateway reads whole, and a streamed one); for
 * usage also an async job submission.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { flushRedisDb, kvStoreYaml } from "../support/stores-yaml.ts";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";

const DB = 18;
const ROUNDS = 100;
/** 100 rounds take seconds on a quiet machine; on a busy one, several times that. */
const ROUND_TIMEOUT_MS = 90_000;

interface UsageView {
  usage: Array<{ service_type: string; total: { requests?: number } }>;
}

let llm: FakeBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  await flushRedisDb(DB);
  llm = await startLlmBackend();
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((gw) => gw.kill()));
  await llm.stop();
});

function config(store: "memory" | "redis"): string {
  const redis = store === "redis" ? `${kvStoreYaml(store, DB)}\n` : "";
  return `
server:
  consumer_header: X-Consumer
${redis}object_store:
  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "gw-answer-complete-")))}
relay:
  embedded: false
services:
  - type: transcription
    model: whisper
    inference_url: ${llm.url}
    operations: { transcribe: [/transcribe] }
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: ${llm.url}
    max_concurrent_sync: 2
    operations: { chat: [/v1/chat/completions] }
  - type: echo
    model: echo
    inference_url: ${llm.url}
    max_concurrent_sync: 2
    operations: { run: [/v1/echo] }
  - type: chat
    model: raw
    inference_url: ${llm.url}
    max_concurrent_sync: 2
    operations: { chat: [/v1/chat/completions] }
`;
}

type Send = (consumer: string) => Promise<Response>;

function sender(gw: GatewayProcess, path: string, body: Record<string, unknown>): Send {
  return (consumer) =>
    fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": consumer },
      body: JSON.stringify(body),
    });
}

/** The kinds of answer, each through a model capped at 2 concurrent sync requests. */
function kinds(gw: GatewayProcess): Array<[string, string, Send]> {
  const messages = [{ role: "user", content: "hi" }];
  return [
    ["a non-streaming LLM answer", "chat", sender(gw, "/v1/chat/completions", { model: "gpt", messages })],
    ["a streamed LLM answer", "chat", sender(gw, "/v1/chat/completions", { model: "gpt", messages, stream: true })],
    ["a direct-proxy answer read whole", "echo", sender(gw, "/v1/echo", { model: "echo" })],
    // No provider: the fake backend's SSE passed through as it arrives (no length: streamed).
    ["a streamed direct-proxy answer", "chat", sender(gw, "/v1/chat/completions", { model: "raw", messages, stream: true })],
  ];
}

/** Sends and reads the whole answer; its status and body. */
async function answer(send: Send, consumer: string): Promise<{ status: number; body: string }> {
  const response = await send(consumer);
  return { status: response.status, body: await response.text() };
}

async function requestsCounted(gw: GatewayProcess, consumer: string, type: string): Promise<number> {
  const response = await fetch(`${gw.url}/usage`, { headers: { "x-consumer": consumer } });
  expect(response.status).toBe(200);
  const view = (await response.json()) as UsageView;
  return view.usage.find((u) => u.service_type === type)?.total.requests ?? 0;
}

describe.each(["memory", "redis"] as const)("on the %s store", (store) => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config(store));
    running.push(gw);
  });

  it(
    "frees the sync slot before the client has its answer: two answers read, a third request at once is never refused",
    { timeout: ROUND_TIMEOUT_MS },
    async () => {
      for (const [kind, , send] of kinds(gw)) {
        const consumer = `slots-${store}-${kind}`;
        for (let round = 1; round <= ROUNDS; round++) {
          const pair = await Promise.all([answer(send, consumer), answer(send, consumer)]);
          const third = await answer(send, consumer);
          for (const got of [...pair, third]) {
            if (got.status !== 200) expect.fail(`${kind}, round ${round}: ${got.status} ${got.body}`);
          }
        }
      }
    },
  );

  it("counts a request in GET /usage by the time the client has its answer", { timeout: ROUND_TIMEOUT_MS }, async () => {
    const submit: Send = (consumer) => {
      const form = new FormData();
      form.append("file", new Blob(["audio"], { type: "audio/wav" }), "a.wav");
      return fetch(`${gw.url}/jobs/transcription`, { method: "POST", body: form, headers: { "x-consumer": consumer } });
    };
    for (const [kind, type, send] of [...kinds(gw), ["an async job submission", "transcription", submit] as const]) {
      const consumer = `usage-${store}-${kind}`;
      for (let round = 1; round <= ROUNDS; round++) {
        const got = await answer(send, consumer);
        expect(got.status).toBe(type === "transcription" ? 202 : 200);
        const counted = await requestsCounted(gw, consumer, type);
        if (counted !== round) expect.fail(`${kind}, round ${round}: GET /usage counts ${counted} requests`);
      }
    }
  });
});
