/**
 * Reliability, scenario 6: backend chaos (docs/design.md#sync-requests and
 * docs/design.md#backend-routing). One real gateway process (Node, or Deno when the suite runs on
 * Deno) with `server.backend_timeout: 1s`, in front of a chaos backend run in this process whose
 * behaviour is the first segment of the request path:
 *
 *   /ok        200 JSON                      /slow     200 JSON after 300 ms
 *   /reset     destroys the connection       /fail     500 JSON
 *   /hang      never answers                 /badjson  200 application/json, truncated JSON
 *   /midreset  200 SSE, two events, then destroys the connection
 *   /stall     200 SSE, one event, then nothing (until the client leaves)
 *   /badsse    200 SSE of garbage events (for a translating provider)
 *
 * The gateway fails over before any answer byte left (network error, timeout, 5xx), answers
 * with a clear error body where it cannot, never waits past its timeout, and stays alive.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { reportReliability } from "../support/reliability-report.ts";

interface ErrorBody {
  error: { message: string; type: string };
}

interface Chaos {
  url: string;
  /** Requests per mode. */
  arrived: Map<string, number>;
  /** Requests per mode whose connection closed before the answer was finished. */
  closedEarly: Map<string, number>;
  close(): Promise<void>;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

async function startChaos(): Promise<Chaos> {
  const arrived = new Map<string, number>();
  const closedEarly = new Map<string, number>();
  const sockets = new Set<Socket>();
  const sse = (res: ServerResponse) => res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const handle = (req: IncomingMessage, res: ServerResponse, mode: string) => {
    res.on("error", () => {});
    res.on("close", () => {
      if (!res.writableFinished) bump(closedEarly, mode);
    });
    const json = (status: number, text: string) => {
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    };
    switch (mode) {
      case "ok":
        return json(200, JSON.stringify({ from: "ok", path: req.url }));
      case "slow":
        return void setTimeout(() => json(200, JSON.stringify({ from: "slow" })), 300);
      case "fail":
        return json(500, JSON.stringify({ error: "backend exploded" }));
      case "reset":
        return req.socket.destroy();
      case "hang":
        return;
      case "badjson":
        return json(200, '{"id":"chatcmpl-1","object":"chat.completion","choices":[{"message":{"content":"trunc');
      case "midreset":
        sse(res);
        res.write('data: {"n":1}\n\n');
        res.write('data: {"n":2}\n\n');
        return void setTimeout(() => req.socket.destroy(), 50);
      case "stall":
        sse(res);
        return void res.write('data: {"n":1}\n\n');
      case "badsse":
        sse(res);
        res.write("event: message_start\ndata: {not json at all\n\n");
        res.write("data: \u0000\u0001garbage\n\n");
        res.write('event: content_block_delta\ndata: {"type":"content_block_delta","delta":42}\n\n');
        return res.end();
      default:
        return json(404, JSON.stringify({ error: `unknown chaos mode ${mode}` }));
    }
  };
  const server: Server = createServer((req, res) => {
    const mode = (req.url ?? "/").split("/")[1] ?? "";
    bump(arrived, mode);
    // Read the whole request first, as a real backend does.
    req.on("data", () => {});
    req.on("end", () => handle(req, res, mode));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrived,
    closedEarly,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let chaos: Chaos;
let gw: GatewayProcess;
const TIMEOUT_MS = 1000;

beforeAll(async () => {
  chaos = await startChaos();
  const c = chaos.url;
  const sync = (model: string, backends: string[]) => `
  - type: chaos
    model: ${model}
    operations: { run: [/v1/chaos] }
    backends:
${backends.map((b, i) => `      - { url: "${c}/${b}", weight: ${i === 0 ? 1 : 0} }`).join("\n")}`;
  const llm = (model: string, provider: string, backend: string) => `
  - type: chat
    model: ${model}
    provider: ${provider}
    inference_url: ${c}/${backend}
    operations: { chat: [/v1/chat/completions] }`;
  gw = await startGateway(`
server:
  backend_timeout: 1s
services:${sync("reset-then-ok", ["reset", "ok"])}${sync("fail-then-ok", ["fail", "ok"])}${sync("hang-then-ok", ["hang", "ok"])}${
    sync("all-reset", ["reset", "reset"])
  }${sync("all-fail", ["fail", "fail"])}${sync("all-hang", ["hang"])}${sync("slow", ["slow"])}${sync("badjson", ["badjson", "ok"])}${
    sync("midreset", ["midreset", "ok"])
  }${sync("stall", ["stall", "ok"])}${llm("llm-badjson", "chat_completions", "badjson")}${llm("llm-badjson-translated", "messages_api", "badjson")}${
    llm("llm-midreset", "chat_completions", "midreset")
  }${llm("llm-badsse", "messages_api", "badsse")}${llm("llm-reset", "chat_completions", "reset")}${llm("llm-hang", "messages_api", "hang")}
`);
});
afterAll(async () => {
  await gw?.kill();
  await chaos?.close();
});

function callSync(model: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gw.url}/v1/chaos`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, input: "x" }), signal });
}

function callLlm(model: string, stream: boolean): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, stream, max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
  });
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await fn();
  return { value, ms: Date.now() - started };
}

async function expectError(response: Response, status: number, type: string): Promise<ErrorBody> {
  const text = await response.text();
  expect({ status: response.status, text }).toMatchObject({ status });
  const body = JSON.parse(text) as ErrorBody;
  expect(body.error.type).toBe(type);
  expect(body.error.message.length).toBeGreaterThan(0);
  return body;
}

/** Reads a streamed body to its end; a broken stream counts as ended. Never waits past `ms`. */
async function readAll(response: Response, ms = 10_000): Promise<{ text: string; broken: boolean }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + ms;
  try {
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`stream still open after ${ms} ms: ${text}`);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const chunk = await Promise.race([
        reader.read(),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`stream still open after ${ms} ms: ${text}`)), left))),
      ]).finally(() => clearTimeout(timer));
      if (chunk.done) return { text, broken: false };
      text += decoder.decode(chunk.value, { stream: true });
    }
  } catch (error) {
    if (error instanceof Error && error.message.startsWith("stream still open")) throw error;
    return { text, broken: true };
  }
}

const figures = { requests: 0, failedOver: 0, clearErrors: 0, passedThrough: 0 };

describe("scenario 6: backend chaos", () => {
  it("fails over on a reset connection, a 5xx and a timeout before any answer byte", async () => {
    for (const model of ["reset-then-ok", "fail-then-ok"]) {
      const response = await callSync(model);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { from: string }).from).toBe("ok");
      figures.requests++;
      figures.failedOver++;
    }
    const { value: response, ms } = await timed(() => callSync("hang-then-ok"));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { from: string }).from).toBe("ok");
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(TIMEOUT_MS + 3000);
    figures.requests++;
    figures.failedOver++;
  });

  it("answers a clear error when no backend can answer, never later than the timeout", async () => {
    const reset = await expectError(await callSync("all-reset"), 502, "backend_error");
    expect(reset.error.message).toContain(chaos.url);
    // Every backend answered 5xx: the last answer is returned as it is.
    const failed = await callSync("all-fail");
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ error: "backend exploded" });
    const { value: hung, ms } = await timed(() => callSync("all-hang"));
    await expectError(hung, 504, "timeout_error");
    expect(ms).toBeLessThan(TIMEOUT_MS + 3000);
    // The abandoned backend request was closed, not left open.
    await waitUntil(() => (chaos.closedEarly.get("hang") ?? 0) >= 2, 10_000, () => `hang closes: ${chaos.closedEarly.get("hang")}`);
    // A slow backend within the timeout is just slow.
    const slow = await callSync("slow");
    expect(slow.status).toBe(200);
    expect(await slow.json()).toEqual({ from: "slow" });
    figures.requests += 4;
    figures.clearErrors += 2;
  });

  it("passes a 2xx with malformed JSON through byte for byte (no failover after an answer)", async () => {
    const okBefore = chaos.arrived.get("ok") ?? 0;
    const response = await callSync("badjson");
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('{"id":"chatcmpl-1","object":"chat.completion","choices":[{"message":{"content":"trunc');
    expect(chaos.arrived.get("ok") ?? 0).toBe(okBefore);
    figures.requests++;
    figures.passedThrough++;
  });

  it("breaks the client's stream off when the backend resets mid-stream, without failing over", async () => {
    const okBefore = chaos.arrived.get("ok") ?? 0;
    const response = await callSync("midreset");
    expect(response.status).toBe(200);
    const { text, broken } = await readAll(response);
    expect(text).toContain('data: {"n":1}');
    // The client's connection is broken off too, so it cannot take the cut answer for a whole one.
    expect(broken).toBe(true);
    expect(chaos.arrived.get("ok") ?? 0).toBe(okBefore);
    figures.requests++;
  });

  it("closes the backend request of a stalled stream when the client leaves", async () => {
    const controller = new AbortController();
    const response = await callSync("stall", controller.signal);
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('data: {"n":1}');
    controller.abort();
    await reader.cancel().catch(() => {});
    await waitUntil(() => (chaos.closedEarly.get("stall") ?? 0) >= 1, 10_000, () => "the stalled backend request was never closed");
    figures.requests++;
  });

  it("LLM proxy: malformed JSON passes through untranslated, and is a clear 502 when it must be translated", async () => {
    const passthrough = await callLlm("llm-badjson", false);
    expect(passthrough.status).toBe(200);
    expect(await passthrough.text()).toContain('"content":"trunc');
    const translated = await expectError(await callLlm("llm-badjson-translated", false), 502, "backend_error");
    expect(translated.error.message).toMatch(/not JSON/);
    figures.requests += 2;
    figures.passedThrough++;
    figures.clearErrors++;
  });

  it("LLM proxy: a stream broken mid-way or made of garbage ends with one error event", async () => {
    for (const model of ["llm-midreset", "llm-badsse"]) {
      const response = await callLlm(model, true);
      expect(response.status).toBe(200);
      const { text } = await readAll(response);
      if (model === "llm-midreset") expect(text.startsWith('data: {"n":1}\n\ndata: {"n":2}\n\n'), text).toBe(true);
      {
        // Translated or passed through, the client's stream ends with one error event.
        const errorEvent = text.split("\n").find((line) => line.startsWith('data: {"error"'));
        expect(errorEvent, text).toBeDefined();
        const body = JSON.parse(errorEvent!.slice("data: ".length)) as ErrorBody;
        expect(body.error.type).toBe("backend_error");
        expect(body.error.message.length).toBeGreaterThan(0);
      }
      figures.requests++;
    }
    await expectError(await callLlm("llm-reset", false), 502, "backend_error");
    const { value: hung, ms } = await timed(() => callLlm("llm-hang", true));
    await expectError(hung, 504, "timeout_error");
    expect(ms).toBeLessThan(TIMEOUT_MS + 3000);
    figures.requests += 2;
    figures.clearErrors += 3;
  });

  it("is alive and healthy after all of it", async () => {
    expect(gw.child.exitCode).toBeNull();
    expect(gw.child.signalCode).toBeNull();
    const health = await fetch(`${gw.url}/health`);
    expect(health.status).toBe(200);
    await health.arrayBuffer();
    // Still serving: a good request right after the chaos.
    const ok = await callSync("reset-then-ok");
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    figures.requests++;
    figures.failedOver++;
    reportReliability({
      id: 6,
      scenario: "Backend chaos",
      load: "sync and LLM requests (plain and streamed) to 16 chaos backends",
      faults: "connection resets, 5xx, hangs past the 1s timeout, truncated JSON, streams reset or stalled mid-way, garbage SSE",
      requests: figures.requests,
      lost: 0,
      duplicated: 0,
      errors: 0,
      expectedErrors: { count: figures.clearErrors, why: "502/504 with the error body where no backend could answer" },
      details: { failed_over: figures.failedOver, passed_through: figures.passedThrough, crashes: 0, hangs: 0 },
    });
  });
});
