/**
 * A gateway with every built-in plugin on, in-process, for the admin tests that walk the
 * route table: the config (`everything`), the gateway (`gateway`, closed by `closeGateways` after each test), its
 * `/-/` routes as requests (`adminRoutes`) and a request to it (`send`, from `http://gateway`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { FsObjectStore } from "../../../adapters/objects-fs/index.ts";
import { Gateway } from "../../../core/gateway.ts";
import { createLogger } from "../../../core/log.ts";
import { builtinPlugins } from "../../../plugins/index.ts";

/**
 * Every built-in plugin on (auth in api_key mode, so /-/keys is there too); tracing only
 * for the route walk (its exporter's shutdown makes each close take seconds).
 */
export const everything = (admin: string, otel = false) => `
${admin}
server: { consumer_header: X-Consumer }
auth: { mode: api_key, api_key: { secret: s } }
policies: { default: allow }
audit_log: { enabled: true }
opentelemetry: { enabled: ${otel}, exporter: { endpoint: "http://127.0.0.1:9/", insecure: true } }
lifecycle: { gc: { enabled: true } }
batches: { enabled: true }
pricing: { models: { talker: { input: 1, output: 2 } } }
services:
  - { type: ocr, model: reader, inference_url: "http://127.0.0.1:9/", operations: { read: ["/v1/read"] }, visibility: { user_types: [staff] } }
  - { type: chat, model: talker, inference_url: "http://127.0.0.1:9/", provider: chat_completions, response_cache_ttl: 60 }
`;

const closers: Array<() => Promise<void>> = [];

/**
 * Closes the gateways `gateway` started: each test file calls it `afterEach`. Not registered
 * here: a worker imports this module once for all its files (`isolate: false`), so a hook
 * registered on import would be the first file's only, and the next files' gateways (tracing
 * on: the process's OpenTelemetry SDK with them) would be left open.
 */
export async function closeGateways(): Promise<void> {
  for (const close of closers.splice(0).reverse()) await close();
}

export async function gateway(yaml: string, lines: Array<Record<string, unknown>> = []): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), "gw-admin-"));
  closers.push(async () => rmSync(dir, { recursive: true, force: true }));
  const gw = await Gateway.create({
    readConfig: async () => yaml,
    env: {},
    importModule: (specifier) => import(specifier),
    openStores: async () => ({ kv: new MemoryKv(), objects: new FsObjectStore({ dir }) }),
    plugins: builtinPlugins,
    log: createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
    deferStart: true,
  });
  closers.push(() => gw.close());
  return gw;
}

/** The route table's `/-/` routes as requests (`:param` filled in). */
export function adminRoutes(gw: Gateway): Array<{ method: string; path: string }> {
  const seen = new Set<string>();
  const out: Array<{ method: string; path: string }> = [];
  for (const route of gw.runtime.app.routes) {
    if (!route.path.startsWith("/-/") || seen.has(`${route.method} ${route.path}`)) continue;
    seen.add(`${route.method} ${route.path}`);
    const method = route.method === "ALL" ? "GET" : route.method;
    out.push({ method, path: route.path.replace(/:[^/]+/g, "x") });
  }
  return out;
}

/** A request to `gw` as JSON (`{}` as the body of any method but GET and HEAD), with `headers` on top. */
export const send = (gw: Gateway, method: string, path: string, headers: Record<string, string> = {}, body = "{}") =>
  gw.fetch(
    new Request(`http://gateway${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(method === "GET" || method === "HEAD" ? {} : { body }),
    }),
  );
