/**
 * The process and runtime series on /metrics (`metrics.default_metrics`, on by default): the
 * real gateway process (Node runs dist/, Deno the source), a hot reload turning them off and on
 * again, and a standalone relay's metrics listener on the suite's redis-server and s3rver.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type GatewayProcess, startGateway, type StartOptions, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";
import { TEST_BUCKET } from "../support/servers.ts";
import { storesYaml } from "../support/stores-yaml.ts";

const running: GatewayProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
});

async function start(yaml: string, options?: StartOptions): Promise<GatewayProcess> {
  const proc = await startGateway(yaml, options);
  running.push(proc);
  return proc;
}

async function scrape(url: string): Promise<string> {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  return await response.text();
}

async function reload(gw: GatewayProcess, yaml: string): Promise<void> {
  gw.writeConfig(yaml);
  const response = await fetch(`${gw.url}/-/reload`, { method: "POST" });
  expect(await response.json()).toEqual({ status: "reloaded", services: 0 });
  expect(response.status).toBe(200);
}

/** The series a Prometheus user expects of any process, with a plausible value. */
function expectProcessSeries(text: string): void {
  expect(metricValue(text, "process_resident_memory_bytes", {})).toBeGreaterThan(1_000_000);
  expect(metricValue(text, "process_start_time_seconds", {})).toBeGreaterThan(1_600_000_000);
  expect(text).toMatch(/^process_cpu_seconds_total \d/m);
  expect(metricValue(text, "nodejs_heap_size_used_bytes", {})).toBeGreaterThan(1_000_000);
}

function expectNoProcessSeries(text: string): void {
  expect(text).not.toMatch(/^(process|nodejs)_/m);
}

const ON = "services: []\n";
const OFF = "metrics: { default_metrics: false }\nservices: []\n";

describe("process and runtime metrics", () => {
  it("are on /metrics by default next to the gateway's own series", async () => {
    const gw = await start(ON);
    const text = await scrape(gw.url);
    expectProcessSeries(text);
    expect(text).toContain("# TYPE svc_gateway_requests_total counter");
  });

  it("are absent with metrics.default_metrics: false, and a hot reload turns them off and on again", async () => {
    const gw = await start(OFF);
    const off = await scrape(gw.url);
    expectNoProcessSeries(off);
    expect(off).toContain("# TYPE svc_gateway_requests_total counter");

    await reload(gw, ON);
    expectProcessSeries(await scrape(gw.url));
    // A second reload with them on registers nothing twice (prom-client would throw).
    await reload(gw, ON);
    expectProcessSeries(await scrape(gw.url));
    await reload(gw, OFF);
    expectNoProcessSeries(await scrape(gw.url));
    await reload(gw, ON);
    const text = await scrape(gw.url);
    expectProcessSeries(text);
    // The gateway's own counters kept counting through the reloads (one registry per process).
    expect(metricValue(text, "svc_gateway_requests_total", { status: "200", mode: "admin", service_type: "" })).toBeGreaterThanOrEqual(8);
  });

  it("are served by a standalone relay's metrics listener too", async () => {
    const yaml = `
${storesYaml({ db: 14, bucket: TEST_BUCKET })}
relay:
  embedded: false
  metrics_addr: "127.0.0.1:{{PORT}}"
services: []
`;
    const relay = await start(yaml, { role: "relay" });
    let text = "";
    await waitUntil(
      async () => {
        if (relay.child.exitCode !== null) throw new Error(`relay exited with ${relay.child.exitCode}:\n${relay.output()}`);
        text = await fetch(`${relay.url}/metrics`).then((r) => r.text(), () => "");
        return text !== "";
      },
      30_000,
      () => `relay did not answer /metrics:\n${relay.output()}`,
    );
    expectProcessSeries(text);
  });
});
