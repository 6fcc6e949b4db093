/**
 * `node dist/bench/http-clients.js [calls] [rounds]`: what one backend call costs the calling
 * process with each HTTP client Node offers, so the choice in adapters/node/http-client.ts
 * stays a measured one. Each client POSTs the bench's chat request to the mock backend (on
 * the other core) and reads the ~600-byte answer whole, on keep-alive connections, at 1 and
 * at 16 calls in flight; the figure is the runner's own CPU time per call (it runs on core
 * 0, alone), the median of `rounds` rounds taken in turn.
 */
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { join } from "node:path";
import { Agent as UndiciAgent, request as undiciRequest } from "undici";
import { createNodeFetch } from "../adapters/node/http-client.ts";
import { chatRequest, COMPLETION_JSON } from "./fixtures.ts";
import { repoRoot } from "./gateway.ts";
import { listeningPort, OTHER_CORE, pinProcess, SERVER_CORE, spawnService } from "./procs.ts";

type Call = (url: string, body: Uint8Array<ArrayBuffer>) => Promise<string>;

const HEADERS = { "content-type": "application/json", "x-consumer": "bench" };
const httpAgent = new HttpAgent({ keepAlive: true });
const undiciAgent = new UndiciAgent({ keepAliveTimeout: 4000 });
const gatewayFetch = createNodeFetch();

const clients: Record<string, Call> = {
  "node:http, keep-alive agent": (url, body) =>
    new Promise((resolve, reject) => {
      const req = httpRequest(url, { method: "POST", agent: httpAgent, headers: { ...HEADERS, "content-length": String(body.byteLength) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve(Buffer.concat(chunks).toString()));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    }),
  "undici.request (npm undici 7)": async (url, body) => {
    const answer = await undiciRequest(url, { method: "POST", headers: HEADERS, body, dispatcher: undiciAgent });
    return await answer.body.text();
  },
  "the gateway's client (http-client.ts)": async (url, body) => {
    const answer = await gatewayFetch(url, { method: "POST", headers: HEADERS, body, redirect: "manual" });
    return await answer.text();
  },
  "global fetch (Node's bundled undici)": async (url, body) => {
    const answer = await fetch(url, { method: "POST", headers: HEADERS, body, redirect: "manual" });
    return await answer.text();
  },
};

/** CPU µs per call for `calls` calls, `inFlight` at a time; throws on a wrong answer. */
async function measure(call: Call, url: string, calls: number, inFlight: number): Promise<number> {
  const body = new TextEncoder().encode(chatRequest("chat-bench"));
  let started = 0;
  const worker = async () => {
    while (started < calls) {
      started++;
      const text = await call(url, body);
      if (text !== COMPLETION_JSON) throw new Error(`wrong answer: ${text.slice(0, 200)}`);
    }
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 20_000);
  const rounds = Number(process.argv[3] ?? 5);
  pinProcess(process.pid, SERVER_CORE);
  const mock = spawnService("mock backend", [process.execPath, join(repoRoot, "dist/bench/mock-backend.js"), "0"], { core: OTHER_CORE });
  try {
    const url = `http://127.0.0.1:${await listeningPort(mock)}/v1/chat/completions`;
    const results = new Map<string, number[]>();
    for (const inFlight of [1, 16]) {
      for (const name of Object.keys(clients)) await measure(clients[name], url, 2000, inFlight); // warm-up
      for (let round = 0; round < rounds; round++) {
        for (const [name, call] of Object.entries(clients)) {
          const key = `${name}|${inFlight}`;
          results.set(key, [...(results.get(key) ?? []), await measure(call, url, inFlight === 1 ? calls / 4 : calls, inFlight)]);
        }
      }
    }
    process.stdout.write(`| client | CPU µs/call, 1 in flight | CPU µs/call, 16 in flight |\n|---|---|---|\n`);
    for (const name of Object.keys(clients)) {
      const one = median(results.get(`${name}|1`) ?? []);
      const many = median(results.get(`${name}|16`) ?? []);
      process.stdout.write(`| ${name} | ${one.toFixed(1)} | ${many.toFixed(1)} |\n`);
    }
  } finally {
    await mock.stop();
    await undiciAgent.close();
    httpAgent.destroy();
  }
}

await main();
