/**
 * The mock OpenAI-compatible backend: `node dist/bench/mock-backend.js PORT`. It answers at
 * once so the bench measures the proxy, not the backend:
 *  - a JSON POST -> the fixed ~600-byte chat completion (with usage);
 *  - a JSON POST with `"stream":true` -> 22 SSE events, each its own write (and so its own
 *    chunk) one event-loop turn apart, like a token stream with no think time;
 *  - a multipart POST -> drains the upload and answers how many bytes it got;
 *  - GET /health -> 200.
 * `--chunk-delay-ms N` spaces the stream's events by N ms instead.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { COMPLETION_JSON, STREAM_EVENTS, uploadAnswer } from "./fixtures.ts";

const port = Number(process.argv[2] ?? 0);
const delayAt = process.argv.indexOf("--chunk-delay-ms");
const chunkDelayMs = delayAt > 0 ? Number(process.argv[delayAt + 1]) : 0;

const completion = Buffer.from(COMPLETION_JSON);
const events = STREAM_EVENTS.map((event) => Buffer.from(event));
const STREAM_MARK = Buffer.from('"stream":true');

function sendStream(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  let next = 0;
  const write = () => {
    res.write(events[next++]);
    if (next === events.length) res.end();
    else if (chunkDelayMs > 0) setTimeout(write, chunkDelayMs);
    else setImmediate(write);
  };
  write();
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    return;
  }
  const type = req.headers["content-type"] ?? "";
  if (type.startsWith("multipart/")) {
    let bytes = 0;
    req.on("data", (chunk: Buffer) => (bytes += chunk.length));
    req.on("end", () => {
      const body = uploadAnswer(bytes);
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
    });
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    if (body.includes(STREAM_MARK)) return sendStream(res);
    res.writeHead(200, { "content-type": "application/json", "content-length": completion.length }).end(completion);
  });
}

const server = createServer({ keepAliveTimeout: 120_000, requestTimeout: 0 }, handle);
server.listen(port, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ listening: typeof address === "object" && address ? address.port : port })}\n`);
});
process.on("SIGTERM", () => process.exit(0));
