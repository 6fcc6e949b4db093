/**
 * The gateway's Node HTTP client (adapters/node/http-client.ts) keeps fetch's semantics on
 * undici's connection pool: what a caller sees of an answer (status and its text, repeated
 * headers, decoded bodies, redirects), bodies streamed both ways, and aborts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNodeFetch } from "../../../adapters/node/http-client.ts";
import { socketChunks } from "../../../adapters/node/incoming-response.ts";
import { bodyChunks, type ChunkReader } from "../../../core/proxy/body-chunks.ts";
import { waitUntil } from "../../support/gateway-process.ts";

const fetchViaClient = createNodeFetch();
let server: Server;
let base = "";
const seen: Array<{ path: string; method: string; headers: IncomingMessage["headers"]; body: string; aborted: boolean }> = [];

function handle(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  const entry = { path: req.url ?? "", method: req.method ?? "", headers: req.headers, body: "", aborted: false };
  seen.push(entry);
  res.on("close", () => {
    if (!res.writableFinished) entry.aborted = true;
  });
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    entry.body = Buffer.concat(chunks).toString();
    const text = "the answer, compressed or not";
    switch (req.url) {
      case "/echo":
        res.writeHead(201, "Made It", { "content-type": "text/plain", "x-twice": ["one", "two"], "set-cookie": ["a=1", "b=2"] }).end(entry.body);
        return;
      case "/gzip":
        res.writeHead(200, { "content-encoding": "gzip" }).end(gzipSync(text));
        return;
      case "/br":
        res.writeHead(200, { "content-encoding": "br" }).end(brotliCompressSync(text));
        return;
      case "/redirect":
        res.writeHead(302, { location: "/elsewhere" }).end();
        return;
      case "/empty":
        res.writeHead(204).end();
        return;
      case "/chunks": {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const events = ["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"];
        const next = () => (events.length > 0 ? (res.write(events.shift()), setImmediate(next)) : res.end());
        next();
        return;
      }
      case "/big":
        res.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.alloc(1024 * 1024, "abcdefgh"));
        return;
      case "/break":
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: 1\n\n");
        setImmediate(() => res.socket?.destroy());
        return;
      case "/slow-body":
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("first part;");
        return; // never ends
      default:
        res.writeHead(404).end();
    }
  });
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("the Node HTTP client", () => {
  it("sends the body and headers, and answers with the status, its text, every repeated header and the body", async () => {
    const response = await fetchViaClient(`${base}/echo`, { method: "POST", headers: { "x-caller": "test" }, body: '{"hello":"world"}', redirect: "manual" });
    expect(response.status).toBe(201);
    expect(response.statusText).toBe("Made It");
    expect(response.headers.get("x-twice")).toBe("one, two");
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    // A real Response; iterated or copied, its headers are the same list.
    expect(response).toBeInstanceOf(Response);
    const listed = [...new Headers(response.headers)].filter(([name]) => ["content-type", "set-cookie", "x-twice"].includes(name));
    expect(listed).toEqual([["content-type", "text/plain"], ["set-cookie", "a=1"], ["set-cookie", "b=2"], ["x-twice", "one, two"]]);
    expect(await response.text()).toBe('{"hello":"world"}');
    const request = seen.find((r) => r.path === "/echo");
    expect(request?.headers["x-caller"]).toBe("test");
    expect(request?.headers["content-length"]).toBe("17");
    expect(request?.headers["accept-encoding"]).toBe("gzip, deflate");
  });

  it("decodes gzip and brotli answers as fetch does", async () => {
    for (const path of ["/gzip", "/br"]) {
      const response = await fetchViaClient(`${base}${path}`, { redirect: "manual" });
      expect(await response.text(), path).toBe("the answer, compressed or not");
    }
  });

  it("streams a request body and reads the answer as a stream", async () => {
    const parts = ["part one, ", "part two"];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = parts.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(next));
      },
    });
    const response = await fetchViaClient(`${base}/echo`, { method: "POST", body, redirect: "manual", duplex: "half" } as RequestInit);
    const reader = response.body!.getReader();
    let text = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);
    expect(text).toBe("part one, part two");
  });

  describe("a body's chunks taken without a web stream (core/proxy/body-chunks.ts)", () => {
    async function readAll(reader: ChunkReader): Promise<{ text: string; chunks: number }> {
      let text = "";
      let chunks = 0;
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        text += new TextDecoder().decode(chunk.value);
        chunks++;
      }
      return { text, chunks };
    }

    it("gives the chunks as they came, then done; the body is used", async () => {
      const response = await fetchViaClient(`${base}/chunks`, { redirect: "manual" });
      const reader = bodyChunks(response)!;
      expect(response.bodyUsed).toBe(true);
      const { text } = await readAll(reader);
      expect(text).toBe("data: 1\n\ndata: 2\n\ndata: 3\n\n");
      expect(await reader.read()).toEqual({ done: true, value: undefined });
      await expect(response.text()).rejects.toThrow(TypeError);
    });

    it("queues chunks that come before they are read, pausing the source at 64 KiB, and keeps every byte", async () => {
      const source = new PassThrough();
      const reader = socketChunks(source);
      for (let i = 0; i < 100; i++) source.write(Buffer.alloc(1024, String.fromCharCode(97 + (i % 26))));
      await waitUntil(() => source.isPaused(), 5000, () => "the source was not paused");
      source.end();
      const { text, chunks } = await readAll(reader);
      expect(chunks).toBe(100);
      expect(text).toBe(Array.from({ length: 100 }, (_, i) => String.fromCharCode(97 + (i % 26)).repeat(1024)).join(""));
    });

    it("keeps every byte of a large answer", async () => {
      const response = await fetchViaClient(`${base}/big`, { redirect: "manual" });
      expect((await readAll(bodyChunks(response)!)).text).toBe("abcdefgh".repeat(128 * 1024));
    });

    it("fails the read when the connection closes before the body is complete", async () => {
      const response = await fetchViaClient(`${base}/break`, { redirect: "manual" });
      const reader = bodyChunks(response)!;
      expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: 1\n\n");
      await expect(reader.read()).rejects.toThrow();
    });

    it("ends a pending read as done when cancelled, and closes the backend's connection", async () => {
      const response = await fetchViaClient(`${base}/slow-body`, { redirect: "manual" });
      const reader = bodyChunks(response)!;
      expect(new TextDecoder().decode((await reader.read()).value)).toBe("first part;");
      const pending = reader.read();
      const before = seen.filter((r) => r.path === "/slow-body" && r.aborted).length;
      await reader.cancel();
      expect(await pending).toEqual({ done: true, value: undefined });
      await waitUntil(() => seen.filter((r) => r.path === "/slow-body" && r.aborted).length > before, 5000, () => "the backend connection was not closed");
    });

    it("fails a pending read when the signal aborts", async () => {
      const control = new AbortController();
      const response = await fetchViaClient(`${base}/slow-body`, { redirect: "manual", signal: control.signal });
      const reader = bodyChunks(response)!;
      await reader.read();
      const pending = reader.read();
      control.abort(new Error("the client went away"));
      await expect(pending).rejects.toThrow();
    });
  });

  it("returns a redirect with redirect: manual, fails it with redirect: error, and has no body for a 204", async () => {
    const manual = await fetchViaClient(`${base}/redirect`, { redirect: "manual" });
    expect(manual.status).toBe(302);
    expect(manual.headers.get("location")).toBe("/elsewhere");
    await expect(fetchViaClient(`${base}/redirect`, { redirect: "error" })).rejects.toThrow(TypeError);
    const empty = await fetchViaClient(`${base}/empty`, { redirect: "manual" });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it("reads nothing of a streamed body when the connection is refused, so it can be sent elsewhere whole", async () => {
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        controller.enqueue(new TextEncoder().encode("x"));
        controller.close();
      },
    }, { highWaterMark: 0 });
    const refused = await fetchViaClient("http://127.0.0.1:9/echo", { method: "POST", body, redirect: "manual", duplex: "half" } as RequestInit).catch((
      error: unknown,
    ) => error);
    expect(refused).toBeInstanceOf(TypeError);
    expect(String((refused as TypeError & { cause?: { code?: string } }).cause?.code)).toBe("ECONNREFUSED");
    expect(pulls).toBe(0);
    const response = await fetchViaClient(`${base}/echo`, { method: "POST", body, redirect: "manual", duplex: "half" } as RequestInit);
    expect(await response.text()).toBe("x");
  });

  it("stops the backend request when the signal aborts while the body is still coming", async () => {
    const control = new AbortController();
    const response = await fetchViaClient(`${base}/slow-body`, { redirect: "manual", signal: control.signal });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("first part;");
    control.abort(new Error("the client went away"));
    await expect(reader.read()).rejects.toThrow();
    await waitUntil(() => seen.some((r) => r.path === "/slow-body" && r.aborted), 5000, () => "the backend connection was not closed");
  });

  it("refuses at once when the signal is already aborted", async () => {
    const control = new AbortController();
    control.abort(new Error("too late"));
    await expect(fetchViaClient(`${base}/echo`, { method: "POST", body: "{}", redirect: "manual", signal: control.signal })).rejects.toThrow("too late");
  });
});
