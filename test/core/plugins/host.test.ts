import { Type } from "@sinclair/typebox";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { randomIds, systemClock } from "../../../core/clock.ts";
import { loadConfig } from "../../../plugins/config.ts";
import type { GatewayConfig } from "../../../core/config/schema.ts";
import { errors } from "../../../core/errors.ts";
import { createLogger, type Logger, silentLogger } from "../../../core/log.ts";
import { Metrics } from "../../../core/metrics.ts";
import { activePluginNames, orderPlugins, placePlugins, PluginError, processPlugins, Runtime, type RuntimeDeps } from "../../../core/plugins/host.ts";
import {
  definePlugin,
  type EventName,
  type PinnedFetch,
  PLUGIN_API_VERSION,
  type PluginApi,
  type PluginDefinition,
  type PluginLayer,
  type ProcessRole,
} from "../../../core/plugins/types.ts";
import type { ObjectStore } from "../../../core/stores/objects.ts";

/** The host never touches the object store; any call is a test failure. */
const notUsed = (): never => {
  throw new Error("the object store is not used by the plugin host");
};
const unusedObjects: ObjectStore = { kind: "unused", put: notUsed, get: notUsed, delete: notUsed, list: notUsed, ping: notUsed, close: notUsed };

function configOf(text = "", definitions: readonly PluginDefinition[] = []) {
  const sections = definitions.flatMap((d) => (d.section ? [d.section] : []));
  return loadConfig(text, {}, sections);
}

const runtimes: Runtime[] = [];
const stores: MemoryKv[] = [];

afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
  for (const kv of stores.splice(0)) await kv.close();
});

function newRuntime(
  options: { text?: string; definitions?: readonly PluginDefinition[]; log?: Logger; role?: ProcessRole; fetchPinned?: PinnedFetch } = {},
): Runtime {
  const { config, extra } = configOf(options.text, options.definitions);
  const kv = new MemoryKv();
  stores.push(kv);
  const deps: RuntimeDeps = {
    role: options.role ?? "gateway",
    kv,
    objects: unusedObjects,
    clock: systemClock,
    ids: randomIds,
    log: options.log ?? silentLogger,
    metrics: new Metrics(),
    fetch: () => Promise.reject(new Error("the plugin host tests make no outgoing requests")),
    lookupHost: () => Promise.reject(new Error("the plugin host tests resolve no host names")),
    fetchPinned: options.fetchPinned,
  };
  const runtime = new Runtime(config, extra, deps);
  runtimes.push(runtime);
  return runtime;
}

async function installed(
  definitions: readonly PluginDefinition[],
  options: { text?: string; log?: Logger; role?: ProcessRole; fetchPinned?: PinnedFetch } = {},
): Promise<Runtime> {
  const runtime = newRuntime({ ...options, definitions });
  await runtime.install(definitions);
  return runtime;
}

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { log, lines };
}

/** `GatewayServices` is empty until plugins merge into it; these tests use ad-hoc service names. */
interface LooseServices {
  provide(key: string, value: unknown): void;
  use(key: string): unknown;
  has(key: string): boolean;
}
const services = (api: PluginApi<unknown>) => api as unknown as LooseServices;

const plugin = (name: string, extra: Partial<PluginDefinition> = {}): PluginDefinition => ({ name, setup: () => {}, ...extra });
const names = (definitions: readonly PluginDefinition[]) => definitions.map((d) => d.name);
/** The code of the PluginError `fn` throws. */
function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return (error as PluginError).code;
  }
  return undefined;
}

describe("orderPlugins", () => {
  it("sets up dependencies before the plugins that need them", () => {
    const definitions = [plugin("c", { dependsOn: ["b"] }), plugin("b", { dependsOn: ["a"] }), plugin("a"), plugin("d", { dependsOn: ["a", "c"] })];
    expect(names(orderPlugins(definitions, new Set(["a", "b", "c", "d"])))).toEqual(["a", "b", "c", "d"]);
  });

  it("orders independent plugins by name, whatever the order of the list", () => {
    const definitions = [plugin("z"), plugin("y"), plugin("x")];
    expect(names(orderPlugins(definitions, new Set(["x", "y", "z"])))).toEqual(["x", "y", "z"]);
    expect(names(orderPlugins([...definitions].reverse(), new Set(["x", "y", "z"])))).toEqual(["x", "y", "z"]);
  });

  it("puts the earliest layer first among the plugins free to go, then by name", () => {
    const definitions = [
      plugin("a"),
      plugin("tracing", { layer: "telemetry" }),
      plugin("audit", { layer: "audit", after: ["tracing"] }),
      plugin("guard", { layer: "admin-guard" }),
      plugin("b-catch-all", { layer: "catch-all" }),
      plugin("a-catch-all", { layer: "catch-all" }),
      plugin("who", { layer: "identity" }),
      plugin("c", { layer: "routes" }),
    ];
    expect(names(orderPlugins(definitions, new Set(names(definitions))))).toEqual(["tracing", "audit", "guard", "who", "a", "c", "a-catch-all", "b-catch-all"]);
  });

  it("lets the declarations come first: a plugin waits for what it depends on, whatever its layer", () => {
    const definitions = [
      plugin("who", { layer: "identity", optionalDependsOn: ["m-visibility"] }),
      plugin("m-visibility"),
      plugin("a-feature"),
      plugin("z-feature"),
    ];
    const placements = placePlugins(definitions, new Set(names(definitions)));
    expect(placements.map((p) => [p.definition.name, p.layer, p.after])).toEqual([
      ["a-feature", "routes", []],
      ["m-visibility", "routes", []],
      ["who", "identity", ["m-visibility"]],
      ["z-feature", "routes", []],
    ]);
  });

  it("refuses a layer that is not one, suggesting the nearest (GW_PLUGIN_LAYER_UNKNOWN)", () => {
    const typo = [plugin("tracing", { layer: "telemtry" as PluginLayer })];
    expect(() => orderPlugins(typo, new Set(["tracing"]))).toThrow(
      'plugin "tracing" declares layer: "telemtry", which is not a layer; did you mean "telemetry"? (the layers, outermost first: telemetry, audit, admin-guard, identity, routes, catch-all; default routes)',
    );
    expect(codeOf(() => orderPlugins(typo, new Set(["tracing"])))).toBe("GW_PLUGIN_LAYER_UNKNOWN");
    // Refused when turned off too: a plugin's declarations are checked whatever the config.
    expect(codeOf(() => orderPlugins(typo, new Set()))).toBe("GW_PLUGIN_LAYER_UNKNOWN");
    expect(() => orderPlugins([plugin("far", { layer: "outermost" as PluginLayer })], new Set(["far"]))).toThrow(
      /declares layer: "outermost", which is not a layer \(the layers/,
    );
  });

  it("refuses the numeric priority that layers replaced (GW_PLUGIN_LAYER_UNKNOWN), rather than ignoring it", () => {
    const old = [{ ...plugin("tracing"), priority: 300 } as PluginDefinition];
    expect(() => orderPlugins(old, new Set(["tracing"]))).toThrow(
      'plugin "tracing" declares priority, which this gateway no longer reads; declare its layer instead',
    );
    expect(codeOf(() => orderPlugins(old, new Set(["tracing"])))).toBe("GW_PLUGIN_LAYER_UNKNOWN");
  });

  it("follows before and after, skipping a plugin that is off", () => {
    const definitions = [
      plugin("catch-all"),
      plugin("docs", { before: ["catch-all"] }),
      plugin("limits", { after: ["zeta", "off"] }),
      plugin("zeta"),
      plugin("off"),
    ];
    expect(names(orderPlugins(definitions, new Set(["catch-all", "docs", "limits", "zeta"])))).toEqual(["docs", "catch-all", "zeta", "limits"]);
  });

  it("sets up an active optional dependency first, and needs none", () => {
    const definitions = [plugin("a-user", { optionalDependsOn: ["z-provider", "not-installed"] }), plugin("z-provider")];
    expect(names(orderPlugins(definitions, new Set(["a-user", "z-provider"])))).toEqual(["z-provider", "a-user"]);
    expect(names(orderPlugins(definitions, new Set(["a-user"])))).toEqual(["a-user"]);
  });

  it("takes no order from two plugins naming each other optional (each uses the other at request time)", () => {
    const definitions = [plugin("b-webhooks", { optionalDependsOn: ["a-jobs"] }), plugin("a-jobs", { optionalDependsOn: ["b-webhooks"] })];
    expect(names(orderPlugins(definitions, new Set(["a-jobs", "b-webhooks"])))).toEqual(["a-jobs", "b-webhooks"]);
    const ranked = [plugin("b-webhooks", { optionalDependsOn: ["a-jobs"], layer: "identity" }), plugin("a-jobs", { optionalDependsOn: ["b-webhooks"] })];
    expect(names(orderPlugins(ranked, new Set(["a-jobs", "b-webhooks"])))).toEqual(["b-webhooks", "a-jobs"]);
  });

  it("lets a plugin's own before win over its optional dependency", () => {
    const definitions = [plugin("webhooks", { optionalDependsOn: ["jobs"] }), plugin("jobs", { optionalDependsOn: ["webhooks"], before: ["webhooks"] })];
    expect(names(orderPlugins(definitions, new Set(["jobs", "webhooks"])))).toEqual(["jobs", "webhooks"]);
  });

  it("refuses before/after naming no plugin of a complete set (GW_PLUGIN_ORDER_UNKNOWN), skips it in a partial one", () => {
    const definitions = [plugin("usage", { before: ["sync-prox"] })];
    expect(() => orderPlugins(definitions, new Set(["usage"]), { complete: true })).toThrow(
      'plugin "usage" declares before: ["sync-prox"], but no plugin "sync-prox" is installed; correct the name or install it',
    );
    expect(codeOf(() => orderPlugins(definitions, new Set(["usage"]), { complete: true }))).toBe("GW_PLUGIN_ORDER_UNKNOWN");
    expect(names(orderPlugins(definitions, new Set(["usage"])))).toEqual(["usage"]);
  });

  it("names a loop of before/after and optional dependencies (GW_PLUGIN_ORDER_CYCLE)", () => {
    const definitions = [plugin("a", { before: ["b"] }), plugin("b", { optionalDependsOn: ["c"] }), plugin("c", { after: ["b"] })];
    expect(() => orderPlugins(definitions, new Set(["a", "b", "c"]))).toThrow("plugin order cycle: b -> c -> b (each must be set up after the next");
    expect(codeOf(() => orderPlugins(definitions, new Set(["a", "b", "c"])))).toBe("GW_PLUGIN_ORDER_CYCLE");
  });

  it("refuses a plugin written for another plugin API version (GW_PLUGIN_API_VERSION)", () => {
    expect(names(orderPlugins([plugin("current", { apiVersion: PLUGIN_API_VERSION })], new Set(["current"])))).toEqual(["current"]);
    const future = [plugin("future", { apiVersion: PLUGIN_API_VERSION + 1 })];
    expect(() => orderPlugins(future, new Set(["future"]))).toThrow(
      `plugin "future" was written for plugin API version ${
        PLUGIN_API_VERSION + 1
      }, but this gateway provides version ${PLUGIN_API_VERSION}; use a release of "future" written for version ${PLUGIN_API_VERSION}, or a gateway that provides version ${
        PLUGIN_API_VERSION + 1
      }`,
    );
    expect(codeOf(() => orderPlugins(future, new Set(["future"])))).toBe("GW_PLUGIN_API_VERSION");
  });

  it("leaves out inactive plugins", () => {
    const definitions = [plugin("a"), plugin("b"), plugin("c", { dependsOn: ["a"] })];
    expect(names(orderPlugins(definitions, new Set(["a", "c"])))).toEqual(["a", "c"]);
  });

  it("names the plugin and the missing dependency", () => {
    const definitions = [plugin("llm-proxy", { dependsOn: ["providers"] })];
    expect(() => orderPlugins(definitions, new Set(["llm-proxy"]))).toThrow(PluginError);
    expect(() => orderPlugins(definitions, new Set(["llm-proxy"]))).toThrow(
      'plugin "llm-proxy" depends on "providers", which is not installed',
    );
    expect(codeOf(() => orderPlugins(definitions, new Set(["llm-proxy"])))).toBe("GW_PLUGIN_DEPENDENCY_MISSING");
  });

  it("names the plugin and the disabled dependency", () => {
    const definitions = [plugin("jobs"), plugin("webhooks", { dependsOn: ["jobs"] })];
    expect(() => orderPlugins(definitions, new Set(["webhooks"]))).toThrow(
      'plugin "webhooks" depends on "jobs", which is disabled; enable it or turn "webhooks" off',
    );
  });

  it("names every plugin of a dependency cycle", () => {
    const definitions = [plugin("a", { dependsOn: ["b"] }), plugin("b", { dependsOn: ["c"] }), plugin("c", { dependsOn: ["a"] })];
    expect(() => orderPlugins(definitions, new Set(["a", "b", "c"]))).toThrow("plugin order cycle: a -> b -> c -> a");
  });

  it("rejects a plugin registered twice", () => {
    expect(() => orderPlugins([plugin("a"), plugin("a")], new Set(["a"]))).toThrow('plugin "a" is registered twice');
    expect(codeOf(() => orderPlugins([plugin("a"), plugin("a")], new Set(["a"])))).toBe("GW_PLUGIN_DUPLICATE");
  });
});

describe("activePluginNames", () => {
  const config = (text = ""): GatewayConfig => configOf(text).config;

  it("runs every gateway plugin by default", () => {
    expect([...activePluginNames([plugin("a"), plugin("b")], config(), "gateway")]).toEqual(["a", "b"]);
  });

  it("honours plugins: {NAME: false}", () => {
    expect([...activePluginNames([plugin("a"), plugin("b")], config("plugins:\n  a: false\n"), "gateway")]).toEqual(["b"]);
    expect([...activePluginNames([plugin("a"), plugin("b")], config("plugins:\n  a: true\n"), "gateway")]).toEqual(["a", "b"]);
  });

  it("honours the plugin's own enabled(config) rule", () => {
    const audit = plugin("audit", { enabled: (c) => c.audit_log.enabled });
    expect([...activePluginNames([audit], config(), "gateway")]).toEqual([]);
    expect([...activePluginNames([audit], config("audit_log:\n  enabled: true\n"), "gateway")]).toEqual(["audit"]);
    expect([...activePluginNames([audit], config("audit_log:\n  enabled: true\nplugins:\n  audit: false\n"), "gateway")]).toEqual([]);
  });

  it("honours roles, gateway only when none are given", () => {
    const definitions = [plugin("gw"), plugin("worker", { roles: ["relay"] }), plugin("both", { roles: ["gateway", "relay"] })];
    expect([...activePluginNames(definitions, config(), "gateway")]).toEqual(["gw", "both"]);
    expect([...activePluginNames(definitions, config(), "relay")]).toEqual(["worker", "both"]);
  });

  it("runs the gateway's plugins in a relay process when an active plugin there dispatches requests", () => {
    const sender = (dispatches: boolean, extra: Partial<PluginDefinition> = {}) =>
      plugin("sender", { roles: ["gateway", "relay"], dispatches: () => dispatches, ...extra });
    const gatewayOnly = [
      plugin("gw"),
      plugin("gateway-role-only", { enabled: (_config, role) => role === "gateway" }),
      plugin("off-by-switch"),
      plugin("worker", { roles: ["relay"] }),
    ];
    const text = "plugins:\n  off-by-switch: false\n";
    expect(processPlugins([...gatewayOnly, sender(true)], config(text), "relay")).toEqual({
      active: new Set(["worker", "sender", "gw"]),
      runsRequests: true,
    });
    // Not when it does not dispatch, or is not active here; a gateway runs requests whatever its plugins say.
    expect(processPlugins([...gatewayOnly, sender(false)], config(text), "relay")).toEqual({ active: new Set(["worker", "sender"]), runsRequests: false });
    expect(processPlugins([...gatewayOnly, sender(true, { enabled: () => false })], config(text), "relay")).toEqual({
      active: new Set(["worker"]),
      runsRequests: false,
    });
    expect(processPlugins([...gatewayOnly, sender(true)], config(`${text}  sender: false\n`), "relay").runsRequests).toBe(false);
    expect(processPlugins([plugin("gw"), sender(false)], config(), "gateway")).toEqual({ active: new Set(["gw", "sender"]), runsRequests: true });
  });
});

describe("Runtime.install", () => {
  it("wires routes and passes the plugin its defaulted section", async () => {
    const hello = definePlugin({
      name: "hello",
      section: {
        key: "hello",
        schema: Type.Object({ greeting: Type.String({ default: "hello" }), punctuation: Type.String({ default: "!" }) }, { additionalProperties: false }),
      },
      setup(api) {
        const { greeting, punctuation } = api.section;
        api.routes.get("/hello", (c) => c.json({ greeting: `${greeting}${punctuation}`, plugin: api.name, role: api.role }));
      },
    });
    const runtime = await installed([hello], { text: "hello:\n  greeting: hi there\n" });
    const response = await runtime.handle(new Request("http://x/hello"));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ greeting: "hi there!", plugin: "hello", role: "gateway" });
    expect(runtime.activePlugins).toEqual(["hello"]);
    expect((await runtime.handle(new Request("http://x/nothing-here"))).status).toBe(404);
  });

  it("tells each plugin whether requests run through the runtime (api.runsRequests)", async () => {
    const seen: string[] = [];
    const both = (name: string, extra: Partial<PluginDefinition> = {}) =>
      plugin(name, { roles: ["gateway", "relay"], setup: (api) => void seen.push(`${api.role} ${name} ${api.runsRequests}`), ...extra });
    await installed([both("plain")], { role: "gateway" });
    await installed([both("plain")], { role: "relay" });
    await installed([both("plain"), both("sender", { dispatches: () => true })], { role: "relay" });
    expect(seen).toEqual(["gateway plain true", "relay plain false", "relay plain true", "relay sender true"]);
  });

  it("sets up plugins in dependency order and skips disabled ones", async () => {
    const calls: string[] = [];
    const definitions = [
      plugin("b", { dependsOn: ["a"], setup: () => void calls.push("b") }),
      plugin("a", { setup: async () => void calls.push("a") }),
      plugin("off", { setup: () => void calls.push("off") }),
    ];
    const runtime = await installed(definitions, { text: "plugins:\n  off: false\n" });
    expect(calls).toEqual(["a", "b"]);
    expect(runtime.activePlugins).toEqual(["a", "b"]);
  });

  it("fails when a plugin's dependency is turned off in the config", async () => {
    const definitions = [plugin("jobs"), plugin("webhooks", { dependsOn: ["jobs"] })];
    const runtime = newRuntime({ text: "plugins:\n  jobs: false\n" });
    await expect(runtime.install(definitions)).rejects.toThrow('plugin "webhooks" depends on "jobs", which is disabled');
  });

  it("gives plugins the config and the registry built from it", async () => {
    let seen: { addr: string; types: string[] } | undefined;
    await installed([plugin("probe", { setup: (api) => void (seen = { addr: api.config.server.addr, types: api.registry.serviceTypes() }) })], {
      text: "server:\n  addr: ':9999'\nservices:\n  - type: ocr\n  - type: llm\n",
    });
    expect(seen).toEqual({ addr: ":9999", types: ["ocr", "llm"] });
  });

  it("runs requests through the pipeline with the steps plugins added", async () => {
    const definitions = [
      plugin("identify", {
        setup: (api) =>
          api.stage("identify", (ctx) => {
            const consumer = ctx.request.headers.get("x-consumer") ?? undefined;
            ctx.principal = { consumer, groups: [], roles: [], scopes: [], authenticated: false };
          }),
      }),
      plugin("gate", {
        setup: (api) =>
          api.stage("policy", (ctx) => {
            if (!ctx.principal.consumer) throw errors.forbidden("a consumer is required");
          }),
      }),
      plugin("mode", {
        dependsOn: ["identify", "gate"],
        setup: (api) => {
          api.routes.post("/v1/echo", async (c) => {
            const ctx = api.newContext(c.req.raw, "sync", "echo");
            return await api.pipeline.run(ctx, {
              resolve: () => undefined,
              handle: (ctx) => Response.json({ consumer: ctx.principal.consumer, mode: ctx.mode, type: ctx.serviceType }),
            });
          });
        },
      }),
    ];
    const runtime = await installed(definitions);
    const allowed = new Request("http://x/v1/echo", { method: "POST", headers: { "x-consumer": "alice" } });
    const ok = await runtime.handle(allowed);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ consumer: "alice", mode: "sync", type: "echo" });
    expect(runtime.contextOf(allowed)?.principal.consumer).toBe("alice");

    const denied = await runtime.handle(new Request("http://x/v1/echo", { method: "POST" }));
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: { message: "a consumer is required", type: "permission_error", code: "forbidden" } });
  });
});

describe("plugin services", () => {
  it("lets a plugin use what a dependency provides", async () => {
    const definitions = [
      plugin("greeter", {
        setup: (api) => services(api).provide("greeter", { greet: (name: string) => `hello ${name}` }),
      }),
      plugin("web", {
        dependsOn: ["greeter"],
        setup: (api) => {
          const greeter = services(api).use("greeter") as { greet(name: string): string };
          api.routes.get("/greet/:name", (c) => c.text(greeter.greet(c.req.param("name"))));
        },
      }),
    ];
    const runtime = await installed(definitions);
    const response = await runtime.handle(new Request("http://x/greet/bob"));
    expect(await response.text()).toBe("hello bob");
  });

  it("says which plugin used which missing service", async () => {
    const runtime = newRuntime();
    const definitions = [plugin("web", { setup: (api) => void services(api).use("greeter") })];
    await expect(runtime.install(definitions)).rejects.toThrow(
      'plugin "web" uses service "greeter", which no active plugin provides (is its plugin in dependsOn: []?)',
    );
  });

  it("reports through has() whether an optional dependency provides a service", async () => {
    const seen: boolean[] = [];
    const definitions = [
      plugin("consumer", { optionalDependsOn: ["provider"], setup: (api) => void seen.push(services(api).has("cache")) }),
      plugin("provider", { setup: (api) => services(api).provide("cache", new Map()) }),
    ];
    await installed(definitions);
    await installed(definitions, { text: "plugins:\n  provider: false\n" });
    expect(seen).toEqual([true, false]);
  });

  it("refuses use() and has() of a plugin declared in neither dependsOn nor optionalDependsOn (GW_PLUGIN_UNDECLARED_USE)", async () => {
    for (const call of ["use", "has"] as const) {
      const runtime = newRuntime();
      const definitions = [
        plugin("provider", { setup: (api) => services(api).provide("cache", new Map()) }),
        plugin("sneaky", { after: ["provider"], setup: (api) => void services(api)[call]("cache") }),
      ];
      const refusal = await runtime.install(definitions).then(() => undefined, (error: unknown) => error as PluginError);
      expect(refusal?.message).toBe(
        'plugin "sneaky" uses service "cache" of plugin "provider" without declaring it; add "provider" to its dependsOn (required) or optionalDependsOn (used when active)',
      );
      expect(refusal?.code).toBe("GW_PLUGIN_UNDECLARED_USE");
    }
  });

  it("refuses a service provided twice, naming it and the second plugin", async () => {
    const runtime = newRuntime();
    const definitions = [
      plugin("a", { setup: (api) => services(api).provide("store", 1) }),
      plugin("b", { setup: (api) => services(api).provide("store", 2) }),
    ];
    await expect(runtime.install(definitions)).rejects.toThrow('service "store" is already provided; plugin "b" cannot provide it again');
    await expect(newRuntime().install(definitions)).rejects.toMatchObject({ code: "GW_PLUGIN_DUPLICATE" });
  });
});

describe("plugin events", () => {
  it("refuses a listener for an event nobody declares (GW_HOOK_UNKNOWN), accepts a declared one", async () => {
    const listen = (event: string) => plugin("listener", { setup: (api) => api.on(event as EventName, () => {}) });
    const emitter = plugin("emitter", { events: ["job.done" as EventName] });
    const refusal = await newRuntime()
      .install([listen("request.finshed"), emitter])
      .then(() => undefined, (error: unknown) => error as PluginError);
    expect(refusal?.message).toBe(
      'plugin "listener" listens to "request.finshed", which no plugin declares; events: request.finished, llm.usage, job.submitted, job.terminal, job.expiry, relay.processed, job.done (a plugin that emits a new event lists it in definePlugin({ events }))',
    );
    expect(refusal?.code).toBe("GW_HOOK_UNKNOWN");
    // Declared by a plugin that is turned off still counts: the listener just never fires.
    await installed([listen("job.done"), emitter], { text: "plugins:\n  emitter: false\n" });
    await installed([listen("llm.usage")]);
  });

  it("delivers emitted events to every listener", async () => {
    const received: string[] = [];
    const { log, lines } = capturingLogger();
    const definitions = [
      plugin("metrics", {
        setup: (api) => {
          api.on("request.finished", (event) => void received.push(`metrics:${event.status}`));
          api.on("request.finished", () => {
            throw new Error("listener broke");
          });
        },
      }),
      // Listeners run in plugin order: "logs" declares it goes after "metrics".
      plugin("logs", { after: ["metrics"], setup: (api) => api.on("request.finished", (event) => void received.push(`logs:${event.serviceType}`)) }),
      plugin("emitter", {
        setup: (api) => {
          api.routes.get("/fire", (c) => {
            api.emit("request.finished", { mode: "sync", serviceType: "llm", model: "m", status: 201, durationMs: 3 });
            return c.text("fired");
          });
        },
      }),
    ];
    const runtime = await installed(definitions, { log });
    expect(await (await runtime.handle(new Request("http://x/fire"))).text()).toBe("fired");
    expect(received).toEqual(["metrics:201", "logs:llm"]);
    runtime.emit("request.finished", { mode: "admin", serviceType: "", model: "", status: 200, durationMs: 1 });
    expect(received).toEqual(["metrics:201", "logs:llm", "metrics:200", "logs:"]);
    // Logged once: the second failure is the identical line, only counted (repeated log lines are collapsed, core/log.ts).
    const failures = lines.filter((l) => l.event === "event_listener_failed");
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ level: "error", hook: "request.finished", error: { message: "listener broke" } });
  });
});

describe("background tasks", () => {
  it("runs a task on demand with the runtime's abort signal", async () => {
    const runs: boolean[] = [];
    const runtime = await installed([
      plugin("gc", {
        setup: (api) => api.task({ name: "gc.sweep", everyMs: 60_000, run: async (signal) => void runs.push(signal.aborted) }),
      }),
    ]);
    await runtime.runTaskNow("gc.sweep");
    await runtime.runTaskNow("gc.sweep");
    expect(runs).toEqual([false, false]);
    await runtime.close();
    await runtime.runTaskNow("gc.sweep");
    expect(runs).toEqual([false, false, true]);
  });

  it("names the known tasks when asked for an unknown one", async () => {
    const runtime = await installed([
      plugin("gc", {
        setup: (api) => {
          api.task({ name: "gc.sweep", everyMs: 1000, run: async () => {} });
          api.task({ name: "gc.reap", everyMs: 1000, run: async () => {} });
        },
      }),
    ]);
    await expect(runtime.runTaskNow("gc.nope")).rejects.toThrow('no background task "gc.nope"; tasks: gc.sweep, gc.reap');
  });

  it("logs a failing task instead of throwing", async () => {
    const { log, lines } = capturingLogger();
    const runtime = await installed(
      [plugin("gc", { setup: (api) => api.task({ name: "gc.sweep", everyMs: 1000, run: async () => Promise.reject(new Error("store down")) }) })],
      { log },
    );
    await expect(runtime.runTaskNow("gc.sweep")).resolves.toBeUndefined();
    expect(lines).toEqual([
      expect.objectContaining({ level: "error", event: "background_task_failed", task: "gc.sweep", error: { message: "store down", name: "Error" } }),
    ]);
  });

  it("refuses two tasks with the same name", async () => {
    const runtime = newRuntime();
    const task = { name: "dup", everyMs: 1000, run: async () => {} };
    await expect(runtime.install([plugin("a", { setup: (api) => api.task(task) }), plugin("b", { setup: (api) => api.task(task) })])).rejects.toThrow(
      'background task "dup" is registered twice',
    );
  });
});

describe("Runtime.close", () => {
  it("runs onClose callbacks in reverse order, and keeps going after a failure", async () => {
    const closed: string[] = [];
    const { log, lines } = capturingLogger();
    const runtime = await installed(
      [
        plugin("store", { setup: (api) => api.onClose(async () => void closed.push("store")) }),
        plugin("jobs", {
          dependsOn: ["store"],
          setup: (api) => {
            api.onClose(() => void closed.push("jobs.first"));
            api.onClose(() => {
              closed.push("jobs.second");
              throw new Error("close failed");
            });
          },
        }),
        plugin("http", { dependsOn: ["jobs"], setup: (api) => api.onClose(() => void closed.push("http")) }),
      ],
      { log },
    );
    await runtime.close();
    expect(closed).toEqual(["http", "jobs.second", "jobs.first", "store"]);
    expect(lines.filter((l) => l.event === "plugin_close_failed")).toHaveLength(1);
  });

  it("gives plugins a logger that names them", async () => {
    const { log, lines } = capturingLogger();
    await installed([plugin("named", { setup: (api) => api.log.info("ready", { port: 1 }) })], { log });
    expect(lines).toEqual([expect.objectContaining({ level: "info", event: "ready", plugin: "named", port: 1 })]);
  });
});

describe("pinned fetch", () => {
  /** A plugin that wraps the outbound client (as tracing does), and one that calls fetchPinned. */
  function plugins() {
    let api!: PluginApi;
    const wrapper = definePlugin({
      name: "wrapper",
      setup(wrapping) {
        wrapping.wrapFetch((next) => (input, init) => {
          const headers = new Headers(init?.headers);
          headers.set("x-wrapped", "yes");
          return next(input, { ...init, headers });
        });
      },
    });
    const caller = definePlugin({
      name: "caller",
      setup(given) {
        api = given;
      },
    });
    return { definitions: [wrapper, caller], api: () => api };
  }

  it("connects to the given addresses through the runtime's fetch wrappers", async () => {
    const calls: Array<{ url: string; addresses: readonly string[]; wrapped: string | null }> = [];
    const fetchPinned: PinnedFetch = async (url, addresses, init) => {
      calls.push({ url: url.href, addresses, wrapped: new Headers(init?.headers).get("x-wrapped") });
      return new Response("ok", { status: 201 });
    };
    const { definitions, api } = plugins();
    await installed(definitions, { fetchPinned });
    const response = await api().fetchPinned(new URL("https://hooks.example.com/done"), ["93.184.216.34"], { method: "POST", body: "{}" });
    expect(response.status).toBe(201);
    expect(calls).toEqual([{ url: "https://hooks.example.com/done", addresses: ["93.184.216.34"], wrapped: "yes" }]);
  });

  it("refuses, saying why, when the runtime provides no pinned client", async () => {
    const { definitions, api } = plugins();
    await installed(definitions);
    await expect(api().fetchPinned(new URL("https://hooks.example.com/"), ["93.184.216.34"])).rejects.toThrow(/cannot connect to a pinned address/);
  });
});
