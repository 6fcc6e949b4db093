/**
 * The framework floor: `node dist/bench/framework-floor.js PORT TARGET_URL`, the least a proxy
 * built the gateway's way can cost on Node. One Hono route on @hono/node-server (every request
 * a WHATWG `Request`, every answer a `Response`), the body read whole, forwarded with the
 * gateway's own HTTP client (adapters/node/http-client.ts) over pooled keep-alive connections,
 * the answer read whole (an event stream passed on as it arrives). No pipeline, no config, no
 * features. Next to the bare node:http proxy it shows what the Request/Response layer alone
 * costs; next to the gateway, what the gateway's own work costs.
 */
import { serve } from "@hono/node-server";
import { createNodeFetch } from "../adapters/node/http-client.ts";
import { floorApp } from "./floor-app.ts";

const port = Number(process.argv[2] ?? 0);
const target = (process.argv[3] ?? "http://127.0.0.1:9000").replace(/\/+$/, "");
// An event stream is handed to @hono/node-server, which reads it chunk by chunk in JavaScript.
const app = floorApp(target, createNodeFetch(), (body) => body);

serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, (info) => {
  process.stdout.write(`${JSON.stringify({ listening: info.port })}\n`);
});
process.on("SIGTERM", () => process.exit(0));
