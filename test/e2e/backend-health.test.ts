/**
 * Backend health as a user meets it: the gateway process in front of two scripted backends,
 * the first answering 429 with Retry-After. The LLM request fails over, the 429ing backend
 * gets no more traffic, and /-/backends, /metrics and the API document say so.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ScriptedBackend, startScriptedBackend } from "../fixtures/scripted-backend.ts";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";

let first: ScriptedBackend;
let second: ScriptedBackend;
let gw: GatewayProcess;

beforeAll(async () => {
  first = await startScriptedBackend();
  second = await startScriptedBackend();
  gw = await startGateway(`
services:
  - type: chat
    model: m
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    backends:
      - { url: "${first.url}/?key=secret", weight: 1 }
      - { url: "${second.url}", weight: 0 }
`);
});
afterAll(async () => {
  await gw?.kill();
  await first?.close();
  await second?.close();
});

const chat = () =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [] }),
  });

describe("backend health (gateway process)", () => {
  it("fails a 429 over to the next backend and lets the 429ing backend sit out its Retry-After", async () => {
    first.script([{ status: 429, headers: { "retry-after": "60" } }]);
    second.script([]);
    const answer = await chat();
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ ok: true, call: 1 });
    expect((await chat()).status).toBe(200);
    expect(first.calls).toBe(1);
    expect(second.calls).toBe(2);

    const listed = (await (await fetch(`${gw.url}/-/backends`)).json()) as { since: string; backends: Array<Record<string, unknown>> };
    // The sit-out counts as an ejection; attempts and failures count since the process started.
    expect(listed.backends).toEqual([
      {
        service_type: "chat",
        model: "m",
        url: first.url,
        state: "ejected",
        ejected_until: expect.any(String),
        consecutive_failures: 1,
        ejections: 1,
        requests: 1,
        failures: 1,
      },
      {
        service_type: "chat",
        model: "m",
        url: second.url,
        state: "healthy",
        ejected_until: null,
        consecutive_failures: 0,
        ejections: 0,
        requests: 2,
        failures: 0,
      },
    ]);
    expect(Date.parse(listed.since)).toBeLessThanOrEqual(Date.now());
    const until = Date.parse(String(listed.backends[0].ejected_until)) - Date.now();
    expect(until).toBeGreaterThan(50_000);
    expect(until).toBeLessThanOrEqual(60_000);

    const backend = new URL(first.url).host;
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toContain(`svc_backend_ejections_total{service_type="chat",backend="${backend}"} 1`);
    expect(metrics).toContain(`svc_backend_ejected{service_type="chat",backend="${backend}"} 1`);
    expect(metrics).toContain(`svc_backend_ejected{service_type="chat",backend="${new URL(second.url).host}"} 0`);

    expect(await (await fetch(`${gw.url}/openapi.yaml`)).text()).toContain("/-/backends:");
  });
});
