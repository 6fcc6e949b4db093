/**
 * What the HTTP server itself answers, before or around the gateway's handling: requests it
 * cannot parse or wait for (raw sockets), an `Expect` it cannot meet, an answer given before
 * the request body was read (keep-alive clients), and the listen address. The real gateway
 * process, on Node or on Deno (what Deno's server does by itself is checked as such).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBackend, type FakeBackend } from "../fixtures/http-backend.ts";
import { startGateway, waitUntil, type GatewayProcess } from "../support/gateway-process.ts";
import { freePort } from "../support/servers.ts";

let backend: FakeBackend;
beforeAll(async () => {
  backend = await startBackend({ kind: "echo" });
});
afterAll(async () => {
  await backend?.close();
});

function config(server = ""): string {
  return `
server:
  max_body_mb: 1
${server}
object_store:
  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "gw-http-layer-")))}
services:
  - type: echo
    model: echo-model
    operations: { run: [/v1/echo] }
    inference_url: ${backend.url}
  - type: transcription
    model: whisper
    max_file_size_mb: 1
    inference_url: ${backend.url}
`;
}

describe("the listen address", () => {
  it("listens on IPv6 and IPv4 for an address without a host, as on Node", async () => {
    const port = await freePort();
    const gw = await startGateway(config(), { env: { GATEWAY_ADDR: `:${port}` }, noWait: true });
    try {
      for (const host of ["127.0.0.1", "[::1]"]) {
        await waitUntil(async () => (await fetch(`http://${host}:${port}/health`).catch(() => undefined))?.ok === true, 15_000, () => `no answer on ${host}:${port}:\n${gw.output()}`);
      }
      expect(gw.output()).toContain('"address":"::"');
    } finally {
      await gw.kill();
    }
  });
});
