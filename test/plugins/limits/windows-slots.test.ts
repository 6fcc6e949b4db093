/**
 * `GET /-/usage` lists several consumers with their live rate windows. On a Redis Cluster
 * each consumer's windows live in a hash slot of their own (core/stores/hash-tags.ts), so the
 * windows are read per consumer: the test runtime's store refuses a read spanning slots
 * (support/slot-checked-kv.ts), as a cluster would.
 */
import { afterEach, expect, it } from "vitest";
import { type LimitsRuntime, limitsRuntime, until } from "./harness.ts";

const CONFIG = `
server:
  consumer_header: X-Consumer
rate_limits:
  echo:
    "*": { rate: 100, period: 1m }
services:
  - type: echo
    model: echo
    inference_url: http://backend
    operations: { run: ["/v1/echo"] }
`;

let gw: LimitsRuntime | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

interface Page {
  consumers: Array<{ consumer: string; usage: Array<{ service_type: string; window?: { requests?: number } }> }>;
}

it("GET /-/usage shows every listed consumer's live window", async () => {
  const g = (gw = await limitsRuntime(CONFIG));
  const consumers = ["alice", "bob", "carol"];
  for (const [i, consumer] of consumers.entries()) {
    for (let n = 0; n <= i; n++) {
      const pending = g.request("/v1/echo", { method: "POST", body: "{}", headers: { "content-type": "application/json", "x-consumer": consumer } });
      await until(() => g.backend.waiting.length === 1, "the backend call");
      g.backend.answerAll();
      const response = await pending;
      expect(response.status).toBe(200);
      await response.text();
    }
  }
  let page: Page = { consumers: [] };
  await until(async () => {
    const response = await g.request("/-/usage");
    page = (await response.json()) as Page;
    return page.consumers.length === 3;
  }, "three consumers in the usage listing");
  const windows = Object.fromEntries(page.consumers.map((c) => [c.consumer, c.usage.find((u) => u.service_type === "echo")?.window?.requests]));
  expect(windows).toEqual({ alice: 1, bob: 2, carol: 3 });
});
