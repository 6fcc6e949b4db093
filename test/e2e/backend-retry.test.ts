/**
 * Backend retry rounds as a user meets them: a gateway process (Node, or Deno when the suite
 * runs on Deno) in front of a scripted backend that answers 503 first, on the embedded store
 * and on the suite's redis-server (database 19, flushed when the file starts). With
 * `retry_rounds: 2` the client gets the second answer (JSON and a stream); with one round
 * (the spec's) the 503; a request whose first attempt outlasts `retry_deadline` gets no
 * second round however many are allowed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ScriptedBackend, startScriptedBackend } from "../fixtures/scripted-backend.ts";
import { flushRedisDb, kvStoreYaml } from "../support/stores-yaml.ts";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";

const DB = 19;

const SSE = `data: ${
  JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] })
}\n\ndata: [DONE]\n\n`;

const running: GatewayProcess[] = [];
const backends: ScriptedBackend[] = [];

beforeAll(async () => {
  await flushRedisDb(DB);
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((gw) => gw.kill()));
  await Promise.all(backends.splice(0).map((backend) => backend.close()));
});

function config(stores: string, backend: ScriptedBackend, health: string): string {
  return `
server:
  backend_timeout: 1s
${stores}
backend_health: { ${health} }
services:
  - type: chat
    model: m
    provider: chat_completions
    inference_url: ${backend.url}
    operations: { chat: [/v1/chat/completions] }
`;
}

const chat = (gw: GatewayProcess, stream = false) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [], ...(stream ? { stream } : {}) }),
  });

describe.each(["memory", "redis"] as const)("backend retry rounds on the %s store", (store) => {
  const gateways: Record<"twoRounds" | "oneRound" | "shortDeadline", { gw: GatewayProcess; backend: ScriptedBackend }> = {} as never;
  beforeAll(async () => {
    const settings = {
      twoRounds: "retry_rounds: 2, retry_backoff: 1ms",
      oneRound: "",
      // The first attempt times out after server.backend_timeout (1s), past the 500ms budget.
      shortDeadline: "retry_rounds: 5, retry_deadline: 500ms, retry_backoff: 1ms",
    };
    await Promise.all(
      (Object.keys(settings) as Array<keyof typeof settings>).map(async (name) => {
        const backend = await startScriptedBackend();
        backends.push(backend);
        const gw = await startGateway(config(kvStoreYaml(store, DB), backend, settings[name]));
        running.push(gw);
        gateways[name] = { gw, backend };
      }),
    );
  });

  it("retry_rounds 2: a backend that answers 503 then 200 gets the client a 200; the round is counted", async () => {
    const { gw, backend } = gateways.twoRounds;
    backend.script([{ status: 503 }]);
    const answer = await chat(gw);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ ok: true, call: 2 });
    expect(backend.calls).toBe(2);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metricValue(metrics, "svc_backend_retry_rounds_total", { service_type: "chat" })).toBe(1);
  });

  it("retry_rounds 2: a stream refused with 503 before its first bytes streams from the next round", async () => {
    const { gw, backend } = gateways.twoRounds;
    backend.script([{ status: 503 }, { status: 200, headers: { "content-type": "text/event-stream" }, body: SSE }]);
    const answer = await chat(gw, true);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toContain("text/event-stream");
    const text = await answer.text();
    expect(text).toContain('"content":"hi"');
    expect(text).toContain("data: [DONE]");
    expect(backend.calls).toBe(2);
  });

  it("retry_rounds 1 (the default, the spec's one pass): the client gets the backend's 503", async () => {
    const { gw, backend } = gateways.oneRound;
    backend.script([{ status: 503 }]);
    expect((await chat(gw)).status).toBe(503);
    expect(backend.calls).toBe(1);
  });

  it("the deadline stops rounds: a first attempt that outlasts retry_deadline is the only one, even with retry_rounds 5", async () => {
    const { gw, backend } = gateways.shortDeadline;
    backend.script(["hang"]);
    expect((await chat(gw)).status).toBe(504);
    expect(backend.calls).toBe(1);
  });
});
