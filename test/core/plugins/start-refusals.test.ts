/**
 * A start refused by a plugin or by `plugins.load` carries a stable code (core/errors.ts) on
 * the ConfigError the adapters print, and a refused reload logs it; docs/plugins.md "Start errors" lists
 * every code, and a test keeps that table equal to the code list.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStores } from "../../../adapters/stores.ts";
import { ConfigError, START_ERROR_CODES } from "../../../core/errors.ts";
import { Gateway } from "../../../core/gateway.ts";
import { createLogger, type LogEntry } from "../../../core/log.ts";
import { definePlugin, PLUGIN_API_VERSION, type PluginDefinition, type PluginLayer } from "../../../core/plugins/types.ts";
import { builtinPlugins } from "../../../plugins/index.ts";

const gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});

const dir = mkdtempSync(join(tmpdir(), "start-refusals-"));
const base = `object_store: { dir: ${JSON.stringify(dir)} }\nrelay: { embedded: false }\nservices: []\n`;

/** Starts a gateway on `text` whose `plugins.load` modules are `modules`; the refusal, if any, and the log. */
async function start(text: string, modules: Record<string, unknown> = {}) {
  const file = { text };
  const entries: LogEntry[] = [];
  const log = createLogger({ write: () => {} });
  log.tap((entry) => entries.push(entry));
  try {
    const gateway = await Gateway.create({
      readConfig: async () => file.text,
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
    return { gateway, file, entries };
  } catch (error) {
    return { refusal: error as ConfigError, entries };
  }
}

const future: PluginDefinition = definePlugin({ name: "future", apiVersion: PLUGIN_API_VERSION + 1, setup: () => {} });
const misplaced: PluginDefinition = definePlugin({ name: "misplaced", before: ["sync-prox"], setup: () => {} });
const unlayered: PluginDefinition = definePlugin({ name: "unlayered", layer: "outermost" as PluginLayer, setup: () => {} });
// docs goes before sync-proxy, which this plugin depends on: it cannot go before docs too.
const looping: PluginDefinition = definePlugin({ name: "looping", before: ["docs"], dependsOn: ["sync-proxy"], setup: () => {} });
const sneaky: PluginDefinition = definePlugin({ name: "sneaky", after: ["async-jobs"], setup: (api) => void api.has("jobs") });
const deaf: PluginDefinition = definePlugin({ name: "deaf", setup: (api) => api.on("job.finished" as "job.terminal", () => {}) });
const twin: PluginDefinition = definePlugin({ name: "sync-proxy", setup: () => {} });

describe("coded start refusals", () => {
  const cases: Array<[string, PluginDefinition | undefined, keyof typeof START_ERROR_CODES, string]> = [
    [
      "a plugin for another API version",
      future,
      "GW_PLUGIN_API_VERSION",
      `plugins: plugin "future" was written for plugin API version ${PLUGIN_API_VERSION + 1}`,
    ],
    ["before naming no installed plugin", misplaced, "GW_PLUGIN_ORDER_UNKNOWN", 'plugins: plugin "misplaced" declares before: ["sync-prox"]'],
    [
      "a layer that is not one",
      unlayered,
      "GW_PLUGIN_LAYER_UNKNOWN",
      'plugins: plugin "unlayered" declares layer: "outermost", which is not a layer (the layers, outermost first: telemetry, audit',
    ],
    ["declarations that loop", looping, "GW_PLUGIN_ORDER_CYCLE", "plugins: plugin order cycle: docs -> looping -> sync-proxy -> docs"],
    [
      "has() of an undeclared plugin",
      sneaky,
      "GW_PLUGIN_UNDECLARED_USE",
      'plugins: plugin "sneaky" uses service "jobs" of plugin "async-jobs" without declaring it',
    ],
    ["a listener for an undeclared event", deaf, "GW_HOOK_UNKNOWN", 'plugins: plugin "deaf" listens to "job.finished", which no plugin declares'],
    ["a second plugin with a built-in name", twin, "GW_PLUGIN_DUPLICATE", 'plugins: plugin "sync-proxy" is registered twice'],
    ["a module that cannot be imported", undefined, "GW_PLUGIN_LOAD_FAILED", 'plugins.load[0]: cannot import "./missing.ts": Cannot find module'],
  ];
  for (const [what, definition, code, problem] of cases) {
    it(`${what}: ${code}`, async () => {
      const modules = definition ? { "./plugin.ts": { default: definition } } : {};
      const { refusal } = await start(`plugins:\n  load: [${definition ? "./plugin.ts" : "./missing.ts"}]\n${base}`, modules);
      expect(refusal).toBeInstanceOf(ConfigError);
      expect(refusal?.code).toBe(code);
      expect(refusal?.problems).toHaveLength(1);
      expect(refusal?.problems[0]).toContain(problem);
    });
  }

  it("a config the schema refuses, or a plugin finds wrong: GW_CONFIG_INVALID", async () => {
    const schema = await start(`${base}server: { addr: nowhere }\n`);
    expect(schema.refusal?.code).toBe("GW_CONFIG_INVALID");
    const plugin = await start(
      base.replace("services: []", "services:\n  - { type: chat, model: m, provider: chat_completion, inference_url: http://127.0.0.1:9 }"),
    );
    expect(plugin.refusal?.code).toBe("GW_CONFIG_INVALID");
    expect(plugin.refusal?.problems[0]).toContain('services[0].provider: "chat_completion" (model "m") is not a provider any plugin registered');
  });

  it("a refused reload logs the code, and answers 500 config_error: the file names a module that cannot be imported", async () => {
    const started = await start(base);
    if (!started.gateway) throw new Error(`did not start: ${started.refusal?.message}`);
    started.file.text = `plugins:\n  load: [./missing.ts]\n${base}`;
    const response = await started.gateway.fetch(new Request("http://gateway/-/reload", { method: "POST" }));
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({
      error: { type: "config_error" },
      problems: [expect.stringContaining('plugins.load[0]: cannot import "./missing.ts"')],
    });
    expect(started.entries.find((entry) => entry.event === "reload_refused")?.fields).toMatchObject({ code: "GW_PLUGIN_LOAD_FAILED" });
  });

  it("a reload whose plugin setup fails unexpectedly answers 500 api_error (not the file's fault as far as the gateway can tell)", async () => {
    const crashing = definePlugin({
      name: "crashing",
      setup: () => {
        throw new TypeError("cannot read properties of undefined");
      },
    });
    const started = await start(base, { "./crash.ts": { default: crashing } });
    if (!started.gateway) throw new Error(`did not start: ${started.refusal?.message}`);
    started.file.text = `plugins:\n  load: [./crash.ts]\n${base}`;
    const response = await started.gateway.fetch(new Request("http://gateway/-/reload", { method: "POST" }));
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ error: { type: "api_error" }, problems: ["cannot read properties of undefined"] });
    expect(started.entries.find((entry) => entry.event === "reload_refused")?.fields).toMatchObject({ code: "GW_START_FAILED" });
  });
});

describe("docs/plugins.md", () => {
  it("lists every start error code, and no other, in the Plugins section", () => {
    const readme = readFileSync(new URL("../../../docs/plugins.md", import.meta.url), "utf8");
    const documented = [...readme.matchAll(/^\| `(GW_[A-Z_]+)` \|/gm)].map((match) => match[1]);
    expect(documented).toEqual(Object.keys(START_ERROR_CODES));
  });
});
