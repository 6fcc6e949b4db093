/**
 * Hot reload as `POST /-/reload` drives it, through `Gateway.create` with a config "file" the
 * test rewrites: a reload validates exactly what a start validates, and the restart-only
 * warning compares with the settings actually running.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Type } from "@sinclair/typebox";
import { afterEach, describe, expect, it } from "vitest";
import { openStores } from "../../adapters/stores.ts";
import { ConfigError } from "../../core/config/load.ts";
import { Gateway } from "../../core/gateway.ts";
import { createLogger, type LogEntry } from "../../core/log.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { builtinPlugins } from "../../plugins/index.ts";

const gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});

const dir = mkdtempSync(join(tmpdir(), "gateway-reload-"));
const stores = `object_store: { dir: ${JSON.stringify(dir)} }\nrelay: { embedded: false }\n`;
const service = (model: string, extra = "") => `  - { type: chat, model: ${model}, inference_url: "http://127.0.0.1:9"${extra} }\n`;
const fileA = `${stores}server: { addr: ":8080" }\nmetrics: { top_consumers: 0 }\nservices:\n${service("a")}`;

/** A gateway reading `file.text` (its `plugins.load` modules are `modules`), and the log lines it wrote. */
async function start(text: string, modules: Record<string, unknown> = {}) {
  const file: { text: string | Error } = { text };
  const entries: LogEntry[] = [];
  const log = createLogger({ write: () => {} });
  log.tap((entry) => entries.push(entry));
  const gateway = await Gateway.create({
    readConfig: async () => {
      if (file.text instanceof Error) throw file.text;
      return file.text;
    },
    env: {},
    importModule: async (specifier) => {
      if (!(specifier in modules)) throw new Error(`Cannot find module '${specifier}'`);
      return modules[specifier];
    },
    openStores,
    plugins: builtinPlugins,
    log,
  });
  gateways.push(gateway);
  const reload = async (next: string) => {
    file.text = next;
    const response = await gateway.fetch(new Request("http://gateway/-/reload", { method: "POST" }));
    return {
      status: response.status,
      body: (await response.json()) as { status?: string; services?: number; problems?: string[]; error?: { message: string; type: string } },
    };
  };
  const models = async () =>
    ((await (await gateway.fetch(new Request("http://gateway/v1/models"))).json()) as { data: { id: string }[] }).data.map((m) => m.id);
  return { gateway, file, entries, reload, models };
}

describe("hot reload", () => {
  it("answers 500 for a server.addr a start refuses, and keeps the running config", async () => {
    const gw = await start(fileA);
    for (const addr of ["not-an-addr", ":99999"]) {
      const refused = await gw.reload(fileA.replace('":8080"', `"${addr}"`).replace(service("a"), service("a") + service("b")));
      expect(refused.status).toBe(500);
      expect(refused.body.problems).toEqual([`server.addr: "${addr}" is not host:port or :port (e.g. ":8080" or "127.0.0.1:8080", port 0-65535)`]);
    }
    expect(await gw.models()).toEqual(["a"]);
    // The same file refuses a start.
    await expect(start(fileA.replace('":8080"', '"not-an-addr"'))).rejects.toThrow(/server\.addr: "not-an-addr" is not host:port/);
  });

  it("refuses an empty or comment-only file: 500, and every service stays", async () => {
    const gw = await start(fileA);
    for (const text of ["", "  \n", "# editing...\n"]) {
      const refused = await gw.reload(text);
      expect(refused.status).toBe(500);
      expect(refused.body.problems).toEqual([expect.stringMatching(/^\(root\): the file is empty/)]);
    }
    expect(await gw.models()).toEqual(["a"]);
    expect(gw.entries.filter((e) => e.event === "reloaded")).toEqual([]);
  });

  it("answers 500 config_error listing every problem of the file, each with its path, and keeps the running config", async () => {
    const gw = await start(fileA);
    const bad = `${stores}servics: []\nwebhooks: { timout: 5s }\nserver: { addr: nowhere }\nservices:\n${
      service("a", ", oprations: { run: [/run] }")
    }  - { model: b }\n`;
    const refused = await gw.reload(bad);
    expect(refused.status).toBe(500);
    const problems = [
      'servics: unknown key; did you mean "services"?',
      'webhooks.timout: unknown key; did you mean "timeout"?',
      'services[0].oprations: unknown key; did you mean "operations"?',
      "services[1].type: required",
      'server.addr: "nowhere" is not host:port or :port (e.g. ":8080" or "127.0.0.1:8080", port 0-65535)',
    ];
    expect([...(refused.body.problems ?? [])].sort()).toEqual([...problems].sort());
    expect(refused.body.error?.type).toBe("config_error");
    for (const problem of problems) expect(refused.body.error?.message).toContain(problem);
    expect(refused.body.error?.message).toMatch(/^config not reloaded, the previous one stays active: /);
    expect(await gw.models()).toEqual(["a"]);
    expect(gw.entries.filter((e) => e.event === "reload_refused")).toHaveLength(1);
  });

  it("names an unknown provider by its service index, at start and on reload", async () => {
    const bad = `${stores}services:\n${service("a")}${service("bad-provider", ", provider: nope")}`;
    const error = await start(bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      expect.stringMatching(
        /^services\[1\]\.provider: "nope" \(model "bad-provider"\) is not a provider any plugin registered \(registered providers: .*chat_completions/,
      ),
    ]);

    const gw = await start(fileA);
    const refused = await gw.reload(bad);
    expect(refused.status).toBe(500);
    expect(refused.body.problems).toEqual([expect.stringMatching(/^services\[1\]\.provider: "nope"/)]);
  });

  it("warns about restart-only keys that differ from the running (started) values, not from the previous file", async () => {
    const gw = await start(fileA);
    const needsRestart = () => gw.entries.filter((e) => e.event === "reload_needs_restart").map((e) => e.fields.keys);

    const changed = fileA.replace('":8080"', '":9090"').replace("top_consumers: 0", "top_consumers: 5").replace(
      "relay: { embedded: false }",
      'relay: { embedded: false, metrics_addr: ":9091" }',
    );
    expect(changed).toContain('metrics_addr: ":9091"');
    expect((await gw.reload(changed)).status).toBe(200);
    expect(needsRestart()).toEqual([["server.addr", "relay.metrics_addr", "metrics.top_consumers"]]);

    // Back to the values the process runs with: nothing to restart for.
    expect((await gw.reload(fileA)).status).toBe(200);
    expect(needsRestart()).toHaveLength(1);

    // A file that omits the keys but whose defaults equal the running values: nothing either.
    expect((await gw.reload(`${stores}services:\n${service("a")}`)).status).toBe(200);
    expect(needsRestart()).toHaveLength(1);
  });

  it("logs the plugins in setup order and the middleware, outermost first, at start and on reload", async () => {
    const gw = await start(`admin: { token: secret }\n${fileA}`);
    const started = gw.entries.find((e) => e.event === "gateway_started")?.fields as { plugins: string[]; middleware: string[] };
    expect(started.middleware).toEqual(["admin"]);
    expect(started.plugins[0]).toBe("admin");
    expect(started.plugins.indexOf("sync-proxy")).toBeGreaterThan(started.plugins.indexOf("docs"));

    // The admin token guards POST /-/reload: the gateway reloaded directly.
    gw.file.text = `admin: { token: secret }\naudit_log: { enabled: true }\n${fileA}`;
    expect(await gw.gateway.reload()).toMatchObject({ ok: true });
    const reloaded = gw.entries.find((e) => e.event === "reloaded")?.fields as { plugins: string[]; middleware: string[] };
    expect(reloaded.middleware).toEqual(["audit-log", "admin"]);
    expect(reloaded.plugins.slice(0, 2)).toEqual(["audit-log", "admin"]);
  });

  it("names each Redis setting a reload cannot apply by its owner's key: the core's section, or a plugin's field in it", async () => {
    const gw = await start(fileA);
    const needsRestart = () => gw.entries.filter((e) => e.event === "reload_needs_restart").map((e) => e.fields.keys);
    // The GC's stale-pending sweep age applies at once: nothing to restart for.
    expect((await gw.reload(`${fileA}redis: { pending_max_age: 10m }\n`)).status).toBe(200);
    expect(needsRestart()).toEqual([]);
    // The response cache's cap on the embedded store, and the core's command timeout, are read at start.
    expect((await gw.reload(`${fileA}redis: { embedded_cache_max_mb: 8 }\n`)).status).toBe(200);
    expect((await gw.reload(`${fileA}redis: { command_timeout: 2s }\n`)).status).toBe(200);
    expect(needsRestart()).toEqual([["redis.embedded_cache_max_mb"], ["redis"]]);
  });

  it("refuses a reload when the file cannot be read, saying so", async () => {
    const gw = await start(fileA);
    gw.file.text = new Error("ENOENT: no such file or directory, open 'config.yaml'");
    const refused = await gw.gateway.fetch(new Request("http://gateway/-/reload", { method: "POST" }));
    expect(refused.status).toBe(500);
    expect(await refused.json()).toMatchObject({
      error: { type: "config_error" },
      problems: ["(file): cannot read the config file: ENOENT: no such file or directory, open 'config.yaml'"],
    });
    expect(await gw.models()).toEqual(["a"]);
  });
});

/**
 * A plugin from plugins.load, as an outside author writes one: a section with a rule the schema
 * cannot say (`validate`) and a key only a restart applies (`restartOnly`, a listener of its own).
 */
const sideDoor = definePlugin({
  name: "side-door",
  section: {
    key: "side_door",
    schema: Type.Object({ addr: Type.String({ default: ":9300" }), greeting: Type.String({ default: "hi" }) }, { additionalProperties: false }),
    validate: (
      section,
      config,
    ) => (section.addr === config.server.addr ? [`side_door.addr: "${section.addr}" is server.addr too; give the side door a port of its own`] : []),
    restartOnly: ["addr"],
  },
  setup(api) {
    const { greeting } = api.section;
    api.routes.get("/side-door", (c) => c.json({ greeting }));
  },
});

describe("hot reload with a plugin from plugins.load", () => {
  const withSideDoor = (section: string) => `plugins: { load: [./side-door.ts] }\nside_door: ${section}\n${fileA}`;
  const modules = { "./side-door.ts": { default: sideDoor } };
  const greetingOf = async (gateway: Gateway) => (await (await gateway.fetch(new Request("http://gateway/side-door"))).json()) as { greeting: string };

  it("runs its section's validate at start and on reload, like a built-in section's", async () => {
    const clash = '{ addr: ":8080" }';
    const error = await start(withSideDoor(clash), modules).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual(['side_door.addr: ":8080" is server.addr too; give the side door a port of its own']);

    const gw = await start(withSideDoor('{ addr: ":9300", greeting: hello }'), modules);
    const refused = await gw.reload(withSideDoor(`{ addr: ":8080", greeting: changed }`));
    expect(refused.status).toBe(500);
    expect(refused.body.problems).toEqual(['side_door.addr: ":8080" is server.addr too; give the side door a port of its own']);
    expect(await greetingOf(gw.gateway)).toEqual({ greeting: "hello" });
  });

  it("warns about its restartOnly keys that differ from the started values, like a built-in section's", async () => {
    const gw = await start(withSideDoor('{ addr: ":9300", greeting: hello }'), modules);
    const needsRestart = () => gw.entries.filter((e) => e.event === "reload_needs_restart").map((e) => e.fields.keys);

    // A key a reload applies: no warning.
    expect((await gw.reload(withSideDoor('{ addr: ":9300", greeting: hola }'))).status).toBe(200);
    expect(await greetingOf(gw.gateway)).toEqual({ greeting: "hola" });
    expect(needsRestart()).toEqual([]);

    expect((await gw.reload(withSideDoor('{ addr: ":9400", greeting: hola }'))).status).toBe(200);
    expect(needsRestart()).toEqual([["side_door.addr"]]);

    // Back to the started value (here by its default): nothing to restart for.
    expect((await gw.reload(withSideDoor("{ greeting: hola }"))).status).toBe(200);
    expect(needsRestart()).toHaveLength(1);
  });

  it("a plugin first loaded by a reload runs with the values of that file: nothing to restart for", async () => {
    const gw = await start(fileA, modules);
    expect((await gw.reload(withSideDoor('{ addr: ":9400" }'))).status).toBe(200);
    expect(await greetingOf(gw.gateway)).toEqual({ greeting: "hi" });
    expect(gw.entries.filter((e) => e.event === "reload_needs_restart")).toEqual([]);
  });
});

describe("a reload in two steps (the workers of server.workers reload together)", () => {
  it("serves the running config until commit; discard keeps it; POST /-/reload goes where reloadWith says", async () => {
    const gw = await start(fileA);
    gw.file.text = fileA.replace(service("a"), service("a") + service("b"));
    const staged = await gw.gateway.stageReload();
    expect(staged.outcome).toEqual({ ok: true, services: 2 });
    expect(await gw.models()).toEqual(["a"]);
    await staged.discard();
    expect(await gw.models()).toEqual(["a"]);

    const again = await gw.gateway.stageReload();
    expect(again.commit()).toEqual({ ok: true, services: 2 });
    expect(await gw.models()).toEqual(["a", "b"]);
    expect(gw.entries.filter((e) => e.event === "reloaded")).toHaveLength(1);

    gw.file.text = "";
    const refused = await gw.gateway.stageReload();
    expect(refused.outcome).toMatchObject({ ok: false, cause: "config" });
    expect(refused.commit()).toMatchObject({ ok: false, cause: "config" });
    expect(await gw.models()).toEqual(["a", "b"]);

    gw.gateway.reloadWith(async () => ({ ok: false, cause: "failure", problems: ["worker 2 stopped"] }));
    const answer = await gw.reload(fileA);
    expect(answer.status).toBe(500);
    expect(answer.body.problems).toEqual(["worker 2 stopped"]);
    expect(await gw.models()).toEqual(["a", "b"]);
  });

  it("drops a staged reload nobody decided when the gateway closes", async () => {
    const gw = await start(fileA);
    gw.file.text = fileA.replace(service("a"), service("b"));
    await gw.gateway.stageReload();
    await gw.gateway.close();
    expect(gw.entries.filter((e) => e.event === "reloaded")).toEqual([]);
  });
});
