/**
 * What the HTTP server itself answers, before or around the gateway's handling: requests it
 * cannot parse or wait for (raw sockets), an `Expect` it cannot meet, an answer given before
 * the request body was read (keep-alive clients), and the listen address. The real gateway
 * process, on Node or on Deno (what Deno's server does by itself is checked as such).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { type Dispatcher, Pool } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { multipartUpload } from "../fixtures/multipart-stream.ts";
import { type GatewayProcess, onDeno, startGateway, waitUntil } from "../support/gateway-process.ts";
import { type RawAnswer, rawExchange } from "../support/raw-http.ts";
import { freePort } from "../support/servers.ts";
import { type SlowLink, startSlowLink } from "../support/slow-link.ts";

const MIB = 1024 * 1024;

interface ErrorBody {
  error: { message: string; type: string; code: string };
}

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

/** The gateway's error body of a raw answer, checked to be JSON announced as such. */
function errorOf(answer: RawAnswer): ErrorBody["error"] {
  expect(answer.headers["content-type"]).toBe("application/json");
  expect(answer.headers.connection).toBe("close");
  return (JSON.parse(answer.body) as ErrorBody).error;
}

describe("requests the HTTP server refuses", () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config());
  });
  afterAll(async () => {
    await gw?.kill();
  });

  it("answers both Content-Length and Transfer-Encoding with 400", async () => {
    const answer = await rawExchange(
      gw.port,
      "POST /v1/echo HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    );
    expect(answer.status).toBe(400);
    if (onDeno) {
      // Deno's server answers this itself, with no body and no hook to give it one.
      expect(answer).toMatchObject({ body: "", headers: { connection: "close", "content-length": "0" } });
      return;
    }
    const error = errorOf(answer);
    expect(error.type).toBe("invalid_request_error");
    expect(error.code).toBe("invalid_request");
    expect(error.message).toBe(
      "the request is not valid HTTP/1.1: Transfer-Encoding can't be present with Content-Length; fix how the client frames its request",
    );
  });

  it("answers a chunk size that is not hex, in the middle of a body, with 400", async () => {
    const answer = await rawExchange(
      gw.port,
      "POST /v1/echo HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nzz\r\n",
    );
    if (onDeno) {
      // Deno's server drops such a connection without an answer.
      expect(answer).toMatchObject({ status: 0, body: "" });
      return;
    }
    expect(answer.status).toBe(400);
    expect(errorOf(answer).message).toBe("the request is not valid HTTP/1.1: Invalid character in chunk size; fix how the client frames its request");
  });

  it("answers headers over the limit with 431, the whole answer reaching a client still sending", async () => {
    if (onDeno) {
      // Deno's server (64 KiB of headers at most) answers 400 itself, with no body, and closes at
      // once: a client still sending often gets a reset instead of the answer.
      const answer = await rawExchange(gw.port, `GET /health HTTP/1.1\r\nHost: gw\r\nX-Big: ${"a".repeat(100 * 1024)}\r\n\r\n`);
      expect([400, 0]).toContain(answer.status);
      if (answer.status === 400) expect(answer).toMatchObject({ body: "", headers: { connection: "close" } });
      else expect(answer.error).toBe("ECONNRESET");
      return;
    }
    // 4 MiB of headers: the parser gives up after 16 KiB while the rest is still arriving; closing
    // at once would reset the connection under the client before it read the answer.
    const answer = await rawExchange(gw.port, `GET /health HTTP/1.1\r\nHost: gw\r\nX-Big: ${"a".repeat(4 * MIB)}\r\n\r\n`);
    expect(answer.status).toBe(431);
    const error = errorOf(answer);
    expect(error.type).toBe("request_too_large");
    expect(error.code).toBe("headers_too_large");
    expect(error.message).toBe("the request's headers are larger than this server accepts (16384 bytes in all); send fewer or shorter headers");
    expect(answer.error).toBeUndefined();
  });

  it("answers an Expect other than 100-continue with 417, on both runtimes", async () => {
    const answer = await rawExchange(
      gw.port,
      "POST /v1/echo HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\n{}",
    );
    expect(answer.status).toBe(417);
    const error = errorOf(answer);
    expect(error.type).toBe("invalid_request_error");
    expect(error.code).toBe("expectation_failed");
    expect(error.message).toBe(
      'the Expect header "teapot" cannot be met: the only expectation this server supports is "100-continue"; send that, or no Expect header',
    );
    expect(backend.requests.filter((r) => r.path === "/v1/echo")).toHaveLength(0);
  });

  it("answers an HTTP/1.1 request without Host with 400 and the error body, on both runtimes", async () => {
    const answer = await rawExchange(gw.port, "POST /v1/echo HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    expect(answer.status).toBe(400);
    expect(errorOf(answer)).toEqual({
      type: "invalid_request_error",
      code: "invalid_request",
      message: "the request has no Host header, which HTTP/1.1 requires; send Host: <host>:<port> of the gateway (HTTP clients do this by themselves)",
    });
    expect(backend.requests.filter((r) => r.path === "/v1/echo")).toHaveLength(0);
    // HTTP/1.0 may leave Host out: Node serves it; Deno's server does not say which version a
    // request came in, so there every request needs a Host.
    const old = await rawExchange(gw.port, "GET /health HTTP/1.0\r\n\r\n");
    if (onDeno) expect(errorOf(old).message).toMatch(/^the request has no Host header/);
    else expect([old.status, old.body]).toEqual([200, '{"status":"ok"}']);
  });

  it("answers two Host headers with 400 (the error body on Node; Deno's server answers itself)", async () => {
    const answer = await rawExchange(gw.port, "GET /health HTTP/1.1\r\nHost: gw\r\nHost: other\r\n\r\n");
    expect(answer.status).toBe(400);
    if (onDeno) {
      expect(answer).toMatchObject({ body: "", headers: { connection: "close", "content-length": "0" } });
      return;
    }
    expect(errorOf(answer)).toEqual({ type: "invalid_request_error", code: "invalid_request", message: "the Host header was sent 2 times; send it once" });
  });

  it.skipIf(onDeno)("answers a Host or target that cannot make a URL with 400 and the error body (Node)", async () => {
    for (
      const [head, reason] of [
        ["GET /health HTTP/1.1\r\nHost: gw/x", "Invalid host header"],
        ["GET /a\\b HTTP/1.1\r\nHost: gw", "Backslash in request path"],
      ]
    ) {
      const answer = await rawExchange(gw.port, `${head}\r\n\r\n`);
      expect([head, answer.status]).toEqual([head, 400]);
      expect(errorOf(answer)).toEqual({
        type: "invalid_request_error",
        code: "invalid_request",
        message: `the request's target or Host header cannot be read (${reason}); send a path starting with "/" and the gateway's host:port as Host`,
      });
    }
  });

  it("still answers 100-continue and serves the request", async () => {
    const answer = await rawExchange(
      gw.port,
      "POST /v1/echo HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    );
    expect(answer.status).toBe(100);
  });
});

describe.skipIf(onDeno)("requests that do not arrive within server.read_timeout (Node)", () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config("  read_timeout: 1s"));
  });
  afterAll(async () => {
    await gw?.kill();
  });

  it("answers headers that never end with 408", async () => {
    const started = Date.now();
    const answer = await rawExchange(gw.port, "GET /health HTTP/1.1\r\nHost: gw\r\n");
    expect(answer.status).toBe(408);
    const error = errorOf(answer);
    expect(error.type).toBe("timeout_error");
    expect(error.code).toBe("request_timeout");
    expect(error.message).toBe("the request did not arrive within 1 s (server.read_timeout); send it faster, or raise server.read_timeout");
    // Checked every second, not every 30 s (Node's default).
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("answers a body that stops coming with 408, while the gateway waits for it", async () => {
    const answer = await rawExchange(gw.port, 'POST /v1/echo HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":');
    expect(answer.status).toBe(408);
    expect(errorOf(answer)).toEqual({
      type: "timeout_error",
      code: "request_timeout",
      message: "the request did not arrive within 1 s (server.read_timeout); send it faster, or raise server.read_timeout",
    });
  });
});

describe("an answer given before the request body was read", () => {
  let gw: GatewayProcess;
  let link: SlowLink;
  beforeAll(async () => {
    gw = await startGateway(config());
    link = await startSlowLink(gw.port);
  });
  afterAll(async () => {
    await link?.close();
    await gw?.kill();
  });

  async function errorOfPool(response: Dispatcher.ResponseData): Promise<ErrorBody["error"]> {
    return ((await response.body.json()) as ErrorBody).error;
  }

  it("closes the connection after an early 413, and a keep-alive client's next request succeeds", async () => {
    // Over a slow uplink: the client has written its whole 2 MiB body (so it takes the
    // connection for reusable) long before the gateway could have read it.
    const pool = new Pool(`http://127.0.0.1:${link.port}`, { connections: 1 });
    try {
      const body = JSON.stringify({ model: "echo-model", pad: "x".repeat(2 * MIB) });
      const refused = await pool.request({ method: "POST", path: "/v1/echo", headers: { "content-type": "application/json" }, body });
      expect(refused.statusCode).toBe(413);
      expect(refused.headers.connection).toBe("close");
      expect((await errorOfPool(refused)).type).toBe("request_too_large");
      const next = await pool.request({ method: "POST", path: "/v1/echo", headers: { "content-type": "application/json" }, body: '{"model":"echo-model"}' });
      expect(next.statusCode).toBe(200);
      await next.body.text();
    } finally {
      await pool.close();
    }
  });

  it("closes the connection after a 413 to an upload too large to drain", async () => {
    // The gateway reads and drops 64 MiB past the 1 MB file limit before it answers; this upload is larger.
    const upload = multipartUpload(100 * MIB, { model: "whisper" });
    const pool = new Pool(gw.url, { connections: 1 });
    try {
      const refused = await pool.request({
        method: "POST",
        path: "/jobs/transcription",
        headers: { "content-type": upload.contentType },
        body: Readable.fromWeb(upload.stream as NodeReadableStream<Uint8Array>),
      });
      expect(refused.statusCode).toBe(413);
      // Deno's server reads and drops the rest of the body itself once the gateway stops reading,
      // and keeps the connection; Node's leaves it to the gateway.
      if (!onDeno) expect(refused.headers.connection).toBe("close");
      expect((await errorOfPool(refused)).message).toContain("max_file_size_mb");
      const next = await pool.request({ method: "GET", path: "/health" });
      expect(next.statusCode).toBe(200);
      await next.body.text();
    } finally {
      await pool.close();
    }
  });
});

describe("the listen address", () => {
  it("listens on IPv6 and IPv4 for an address without a host, as on Node", async () => {
    const port = await freePort();
    const gw = await startGateway(config(), { env: { GATEWAY_ADDR: `:${port}` }, noWait: true });
    try {
      for (const host of ["127.0.0.1", "[::1]"]) {
        await waitUntil(
          async () => (await fetch(`http://${host}:${port}/health`).catch(() => undefined))?.ok === true,
          15_000,
          () => `no answer on ${host}:${port}:\n${gw.output()}`,
        );
      }
      expect(gw.output()).toContain('"address":"::"');
    } finally {
      await gw.kill();
    }
  });
});
