/**
 * The floor: the cheapest reasonable Node reverse proxy, `node dist/bench/bare-proxy.js PORT
 * TARGET_URL`. Every request goes to TARGET + the same path over pooled keep-alive
 * connections, headers as they came (minus hop-by-hop), bodies piped both ways. No routing,
 * no parsing, no limits: whatever the gateway costs beyond this is the price of its features.
 */
import { Agent, createServer, type IncomingHttpHeaders, request } from "node:http";

const port = Number(process.argv[2] ?? 0);
const target = new URL(process.argv[3] ?? "http://127.0.0.1:9000");
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "te", "trailer", "proxy-connection"]);

function strip(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const name in headers) if (!HOP_BY_HOP.has(name)) out[name] = headers[name];
  return out;
}

const server = createServer({ keepAliveTimeout: 120_000, requestTimeout: 0 }, (req, res) => {
  const upstream = request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: strip(req.headers), agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, strip(answer.headers));
      answer.pipe(res);
    },
  );
  upstream.on("error", (error) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(String(error));
  });
  req.pipe(upstream);
});
server.listen(port, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ listening: typeof address === "object" && address ? address.port : port })}\n`);
});
process.on("SIGTERM", () => process.exit(0));
