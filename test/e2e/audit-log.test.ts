/**
 * The audit log as an operator reads it: one JSON line (event "audit") per state-changing
 * request (job submission and cancellation, purge, reload) and per admin read, with the
 * principal, method, path, status and outcome; nothing for other requests; turned on and
 * off by a hot reload.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";

const running: GatewayProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
});

const config = (audit: boolean, extra = "") =>
  `${extra}
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
object_store:
  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "gw-audit-objects-")))}
relay:
  embedded: false
audit_log:
  enabled: ${audit}
services:
  - type: ocr
    model: reader
    inference_url: http://127.0.0.1:9
    operations: { read: [/v1/read] }
`;

type AuditLine = {
  event: string;
  time: string;
  kind: string;
  principal: { consumer?: string; user_type?: string; authenticated: boolean; admin_token?: boolean };
  method: string;
  path: string;
  status: number;
  outcome: string;
  job_id?: string;
  deleted?: number;
  services?: number;
};

function auditLines(gw: GatewayProcess): AuditLine[] {
  return gw
    .output()
    .split("\n")
    .filter((line) => line.includes('"event":"audit"'))
    .map((line) => JSON.parse(line) as AuditLine);
}

async function submit(gw: GatewayProcess, consumer: string): Promise<string> {
  const body = new FormData();
  body.append("file", new Blob(["page"]), "page.png");
  const response = await fetch(`${gw.url}/jobs/ocr`, { method: "POST", body, headers: { "X-Consumer": consumer, "X-User-Type": "pro" } });
  expect(response.status).toBe(202);
  return ((await response.json()) as { job_id: string }).job_id;
}

describe("audit log", () => {
  it("writes one line per state-changing request and admin read, and none for other requests", async () => {
    const gw = await startGateway(config(true));
    running.push(gw);

    const jobId = await submit(gw, "alice");
    expect((await fetch(`${gw.url}/jobs/ocr/${jobId}`, { headers: { "X-Consumer": "alice" } })).status).toBe(200);
    const cancel = await fetch(`${gw.url}/jobs/ocr/${jobId}`, { method: "DELETE", headers: { "X-Consumer": "alice" } });
    expect(cancel.status).toBe(202);
    const denied = await fetch(`${gw.url}/jobs/ocr/${jobId}`, { method: "DELETE", headers: { "X-Consumer": "mallory" } });
    expect(denied.status).toBe(404);
    const purge = await fetch(`${gw.url}/-/jobs/purge`, {
      method: "POST",
      headers: { "content-type": "application/json", "X-Consumer": "ops" },
      body: JSON.stringify({ model: "reader" }),
    });
    expect(purge.status).toBe(200);
    expect((await fetch(`${gw.url}/-/reload`, { method: "POST" })).status).toBe(200);
    await (await fetch(`${gw.url}/-/usage`, { headers: { "X-Consumer": "ops" } })).arrayBuffer();
    // Not audited: reads of one's own jobs, health, metrics, docs, inference calls.
    for (const path of ["/health", "/metrics", "/jobs"]) await (await fetch(`${gw.url}${path}`, { headers: { "X-Consumer": "alice" } })).arrayBuffer();
    await (await fetch(`${gw.url}/v1/read`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } })).arrayBuffer();

    await waitUntil(() => auditLines(gw).length >= 6, 10_000, () => gw.output());
    const lines = auditLines(gw);
    expect(lines.map((l) => `${l.method} ${l.path} ${l.status}`)).toEqual([
      "POST /jobs/ocr 202",
      `DELETE /jobs/ocr/${jobId} 202`,
      `DELETE /jobs/ocr/${jobId} 404`,
      "POST /-/jobs/purge 200",
      "POST /-/reload 200",
      "GET /-/usage 200",
    ]);
    expect(lines[0]).toMatchObject({
      kind: "change",
      principal: { consumer: "alice", user_type: "pro", authenticated: false },
      outcome: "success",
      job_id: jobId,
    });
    expect(Date.parse(lines[0].time)).not.toBeNaN();
    expect(lines[1]).toMatchObject({ principal: { consumer: "alice" }, outcome: "success", job_status: "cancelled" });
    expect(lines[2]).toMatchObject({ principal: { consumer: "mallory" }, outcome: "rejected" });
    expect(lines[3]).toMatchObject({ kind: "change", principal: { consumer: "ops" }, model: "reader", deleted: 1 });
    expect(lines[4]).toMatchObject({ kind: "change", principal: { authenticated: false }, services: 1 });
    expect(lines[4].principal.consumer).toBeUndefined();
    expect(lines[5]).toMatchObject({ kind: "admin_read", principal: { consumer: "ops" }, outcome: "success" });
  });

  it("is switched on and off by a hot reload", async () => {
    const gw = await startGateway(config(false));
    running.push(gw);
    await submit(gw, "alice");

    gw.writeConfig(config(true));
    expect((await fetch(`${gw.url}/-/reload`, { method: "POST" })).status).toBe(200);
    const jobId = await submit(gw, "bob");
    await waitUntil(() => auditLines(gw).length >= 1, 10_000, () => gw.output());

    gw.writeConfig(config(false));
    // The reload request itself is handled, and audited, by the runtime that had it on.
    expect((await fetch(`${gw.url}/-/reload`, { method: "POST" })).status).toBe(200);
    await submit(gw, "carol");
    await waitUntil(() => auditLines(gw).length >= 2, 10_000, () => gw.output());
    // Off now: neither this purge nor the reload that turns it back on is audited.
    expect((await fetch(`${gw.url}/-/jobs/purge`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"model":"reader"}' })).status)
      .toBe(200);
    gw.writeConfig(config(true));
    expect((await fetch(`${gw.url}/-/reload`, { method: "POST" })).status).toBe(200);
    await submit(gw, "dave");
    await waitUntil(() => auditLines(gw).length >= 3, 10_000, () => gw.output());
    const lines = auditLines(gw);
    expect(lines.map((l) => `${l.method} ${l.path} ${l.principal.consumer ?? "-"}`)).toEqual(["POST /jobs/ocr bob", "POST /-/reload -", "POST /jobs/ocr dave"]);
    expect(lines[0]).toMatchObject({ job_id: jobId });
  });

  it("says which admin calls carried admin.token", async () => {
    const gw = await startGateway(config(true, "admin:\n  token: audit-admin-secret"));
    running.push(gw);
    const withToken = await fetch(`${gw.url}/-/usage`, { headers: { authorization: "Bearer audit-admin-secret" } });
    expect(withToken.status).toBe(200);
    await withToken.arrayBuffer();
    const wrongToken = await fetch(`${gw.url}/-/usage`, { headers: { authorization: "Bearer guess" } });
    expect(wrongToken.status).toBe(401);
    await wrongToken.arrayBuffer();
    await waitUntil(() => auditLines(gw).length >= 2, 10_000, () => gw.output());
    const [allowed, refused] = auditLines(gw);
    expect(allowed).toMatchObject({ kind: "admin_read", status: 200, principal: { authenticated: false, admin_token: true } });
    expect(refused).toMatchObject({ kind: "admin_read", status: 401, outcome: "denied" });
    expect(refused.principal.admin_token).toBeUndefined();
  });
});
