/**
 * The order of the built-in plugins' routes, middleware and stage steps comes from their
 * declarations (dependsOn, optionalDependsOn, before/after, layer), not from the order of
 * `builtinPlugins`: shuffling the list changes nothing. The expected layout was recorded from
 * the hand-ordered list the declarations replaced, so it also proves behaviour is unchanged:
 * the same routes in matching order, the same middleware, steps and listeners in the same order.
 * The setup order itself was recorded from the numeric priorities the named layers replaced.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { randomIds, systemClock } from "../../../core/clock.ts";
import { loadConfig } from "../../../plugins/config.ts";
import { silentLogger } from "../../../core/log.ts";
import { Metrics } from "../../../core/metrics.ts";
import { orderPlugins, Runtime } from "../../../core/plugins/host.ts";
import type { PluginApi, PluginDefinition, ProcessRole } from "../../../core/plugins/types.ts";
import type { ObjectStore } from "../../../core/stores/objects.ts";
import { builtinPlugins } from "../../../plugins/index.ts";

const notUsed = (): never => {
  throw new Error("installing the plugins touches no object");
};
const unusedObjects: ObjectStore = { kind: "unused", put: notUsed, get: notUsed, delete: notUsed, list: notUsed, ping: notUsed, close: notUsed };

/** Every built-in plugin active: admin token, auth (with the key admin API), policies, visibility, audit log, tracing, GC, cache, LLM. */
const EVERYTHING = `
admin:
  token: t
auth:
  mode: proxy
  api_key:
    secret: s
policies:
  default: allow
audit_log:
  enabled: true
opentelemetry:
  enabled: true
  exporter:
    endpoint: http://127.0.0.1:9/
    insecure: true
  metrics:
    enabled: true
lifecycle:
  gc:
    enabled: true
services:
  - type: ocr
    model: reader
    inference_url: http://127.0.0.1:9/
    operations: { read: ["/v1/read"] }
    visibility: { user_types: [staff] }
  - type: chat
    model: talker
    inference_url: http://127.0.0.1:9/
    provider: chat_completions
    response_cache_ttl: 60
`;

/** What a runtime registered, in order: routes (method and path), and which plugin added each middleware, step and event listener. */
interface Layout {
  routes: string[];
  middleware: string[];
  steps: Record<string, string[]>;
  listeners: Record<string, string[]>;
}

/** The same plugin, its middleware and stage steps recorded under its name. */
function recorded(definition: PluginDefinition, layout: Layout): PluginDefinition {
  return {
    ...definition,
    setup(api) {
      const recording: PluginApi<unknown> = Object.create(api);
      recording.middleware = (handler) => {
        layout.middleware.push(definition.name);
        api.middleware(handler);
      };
      recording.stage = (stage, step) => {
        (layout.steps[stage] ??= []).push(definition.name);
        api.stage(stage, step);
      };
      recording.on = (event, listener) => {
        (layout.listeners[event] ??= []).push(definition.name);
        api.on(event, listener);
      };
      return definition.setup(recording);
    },
  };
}

const runtimes: Runtime[] = [];
const stores: MemoryKv[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
  for (const kv of stores.splice(0)) await kv.close();
});

async function layoutOf(
  definitions: readonly PluginDefinition[],
  role: ProcessRole,
  text = EVERYTHING,
): Promise<Layout & { plugins: string[]; order: string[] }> {
  const layout: Layout = { routes: [], middleware: [], steps: {}, listeners: {} };
  const wrapped = definitions.map((definition) => recorded(definition, layout));
  // The built-in plugins' sections and service fields are part of loadConfig already.
  const { config, extra } = loadConfig(text, {});
  const kv = new MemoryKv();
  stores.push(kv);
  const runtime = new Runtime(config, extra, {
    role,
    kv,
    objects: unusedObjects,
    clock: systemClock,
    ids: randomIds,
    log: silentLogger,
    metrics: new Metrics(),
    fetch: () => Promise.reject(new Error("installing the plugins makes no request")),
    lookupHost: () => Promise.reject(new Error("installing the plugins resolves no host name")),
  });
  runtimes.push(runtime);
  await runtime.install(wrapped, { complete: true });
  layout.routes = runtime.app.routes.map((route) => `${route.method} ${route.path}`);
  return { ...layout, plugins: [...runtime.activePlugins].sort(), order: [...runtime.activePlugins] };
}

/** A deterministic shuffle (mulberry32), so a failing seed can be replayed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Whether one request can match both routes ("GET /jobs/:type" and "ALL /*" can, "GET /docs"
 * and "POST /jobs/:type" cannot). Hono tries routes in registration order, so the order of
 * such a pair decides which answers; the order of routes no request shares is invisible.
 */
function overlap(a: string, b: string): boolean {
  const [methodA = "", pathA = ""] = a.split(" ");
  const [methodB = "", pathB = ""] = b.split(" ");
  if (methodA !== "ALL" && methodB !== "ALL" && methodA !== methodB) return false;
  const partsA = pathA.split("/");
  const partsB = pathB.split("/");
  for (let i = 0;; i++) {
    const x = partsA[i];
    const y = partsB[i];
    if (x === "*" || y === "*") return true;
    if (x === undefined || y === undefined) return x === y;
    if (x !== y && !x.startsWith(":") && !y.startsWith(":")) return false;
  }
}

/** The routes sorted, and every "this one is tried before that one" of two routes one request can match. */
function matchingOrder(routes: readonly string[]): { routes: string[]; tried: string[] } {
  // Repeated routes ("ALL /*": the core's middleware runner and the sync proxy's catch-all) by occurrence.
  const seen = new Map<string, number>();
  const labelled = routes.map((route) => {
    const count = (seen.get(route) ?? 0) + 1;
    seen.set(route, count);
    return count === 1 ? route : `${route} (#${count})`;
  });
  const tried: string[] = [];
  labelled.forEach((first, i) => {
    for (const [j, then] of labelled.entries()) if (j > i && overlap(routes[i]!, routes[j]!)) tried.push(`${first} before ${then}`);
  });
  return { routes: [...labelled].sort(), tried: tried.sort() };
}

/** Recorded from the hand-ordered list before the declarations replaced it. */
const GATEWAY_LAYOUT: Layout = {
  routes: [
    "ALL /*", // the core's middleware runner
    "POST /-/keys",
    "GET /-/keys",
    "GET /-/keys/:id",
    "PATCH /-/keys/:id",
    "POST /-/keys/:id/rotate",
    "DELETE /-/keys/:id",
    "GET /openapi.yaml",
    "GET /docs",
    "GET /docs/assets/:file",
    "GET /docs/spec/:type/:model",
    "GET /swagger/:type/:model",
    "POST /jobs/:type",
    "GET /jobs/:type/:id",
    "DELETE /jobs/:type/:id",
    "GET /jobs",
    "POST /-/jobs/purge",
    "GET /-/queues",
    "GET /-/relay/deadletter",
    "POST /-/relay/deadletter/discard",
    "GET /-/webhooks/retries",
    "GET /-/webhooks/deadletter",
    "POST /-/webhooks/deadletter/redeliver",
    "GET /-/console",
    "GET /-/console/app.js",
    "GET /-/console/app.css",
    "GET /usage",
    "GET /-/usage",
    "GET /-/usage/report",
    "GET /-/backends",
    "GET /v1/models",
    "GET /v1/models/:model{.+}",
    "ALL /*", // the sync proxy's catch-all, after every other route
  ],
  middleware: ["otel", "audit-log", "admin"],
  steps: {
    identify: ["auth", "auth"], // proxy headers, then gateway keys kept from backends (auth.api_key.secret is set)
    visibility: ["visibility"],
    policy: ["policies"],
    limits: ["policies", "limits"],
    admit: ["idempotency", "limits"],
  },
  listeners: {
    "llm.usage": ["policies", "limits"],
    "relay.processed": ["limits"],
    "job.expiry": ["limits"],
    "job.terminal": ["limits", "webhooks"],
  },
};

const RELAY_LAYOUT: Layout = {
  routes: ["ALL /*"],
  middleware: ["otel"],
  steps: {},
  listeners: { "llm.usage": ["limits"], "relay.processed": ["limits"], "job.expiry": ["limits"], "job.terminal": ["limits", "webhooks"] },
};

/** The setup order under the numeric priorities (otel 300, audit-log 200, admin 150, auth 100, sync-proxy -100) that the layers replaced. */
const GATEWAY_ORDER = [
  "otel",
  "audit-log",
  "admin",
  "console",
  "providers",
  "backend-health",
  "protocol-messages",
  "protocol-responses",
  "provider-bedrock",
  "provider-chat-completions",
  "provider-local-chat",
  "provider-messages-api",
  "provider-gemini",
  "provider-passthrough",
  "provider-responses-api",
  "response-cache",
  "visibility",
  "auth",
  "async-jobs",
  "docs",
  "gc",
  "idempotency",
  "policies",
  "limits",
  "relay",
  "usage",
  "webhooks",
  "sync-proxy",
  "llm-proxy",
  // After the LLM proxy, whose hooks it registers into (optionalDependsOn).
  "guardrails",
];
const RELAY_ORDER = ["otel", "async-jobs", "limits", "relay", "usage", "webhooks"];
/** Every built-in plugin active (pricing and batches included, which the config above leaves off). */
const ALL_ORDER = [
  ...GATEWAY_ORDER.slice(0, 4),
  "pricing",
  ...GATEWAY_ORDER.slice(4, GATEWAY_ORDER.indexOf("sync-proxy")),
  "batches",
  ...GATEWAY_ORDER.slice(GATEWAY_ORDER.indexOf("sync-proxy")),
];

const SEEDS = [1, 2, 3, 7, 42, 1234, 99991];

describe("built-in plugin order", () => {
  for (const [role, expected, order] of [["gateway", GATEWAY_LAYOUT, GATEWAY_ORDER], ["relay", RELAY_LAYOUT, RELAY_ORDER]] as const) {
    it(`${role}: sets the plugins up in the recorded order`, async () => {
      expect((await layoutOf(builtinPlugins, role)).order).toEqual(order);
    });

    it(`${role}: gives the recorded routes (in matching order), middleware, steps and listeners`, async () => {
      const { plugins: _, order: _order, routes, ...layout } = await layoutOf(builtinPlugins, role);
      const { routes: expectedRoutes, ...expectedLayout } = expected;
      expect(matchingOrder(routes)).toEqual(matchingOrder(expectedRoutes));
      expect(layout).toEqual(expectedLayout);
    });

    // The same routes in exactly the same order, not only in matching order: the host's order is deterministic.
    it(`${role}: a shuffled list gives the same layout (seeds ${SEEDS.join(", ")})`, async () => {
      const canonical = await layoutOf(builtinPlugins, role);
      for (const seed of SEEDS) {
        const list = shuffled(builtinPlugins, seed);
        // A seed that left the list as it was would prove nothing.
        expect(list.map((d) => d.name)).not.toEqual(builtinPlugins.map((d) => d.name));
        expect({ seed, ...(await layoutOf(list, role)) }).toEqual({ seed, ...canonical });
      }
    });
  }

  it("relay with batches on: runs the gateway's plugins too, so a line meets the gateway's middleware, steps and listeners; the GC stays in gateways", async () => {
    const withBatches = `${EVERYTHING}batches:\n  enabled: true\n`;
    const relay = await layoutOf(builtinPlugins, "relay", withBatches);
    const gateway = await layoutOf(builtinPlugins, "gateway", withBatches);
    expect(relay.order).toEqual(gateway.order.filter((name) => name !== "gc"));
    expect(gateway.order).toContain("gc");
    expect({ middleware: relay.middleware, steps: relay.steps, listeners: relay.listeners }).toEqual({
      middleware: gateway.middleware,
      steps: gateway.steps,
      listeners: gateway.listeners,
    });
    // The batch routes are the gateways' alone.
    expect(gateway.routes).toContain("POST /v1/batches");
    expect(relay.routes).not.toContain("POST /v1/batches");
  });

  it("with every plugin active, keeps the recorded order", () => {
    expect(orderPlugins(builtinPlugins, new Set(builtinPlugins.map((d) => d.name)), { complete: true }).map((d) => d.name)).toEqual(ALL_ORDER);
  });
});
