/**
 * A feature is one folder: test/fixtures/plugins/greeter holds a route, a config section, its
 * OpenAPI paths and a console panel, and registering it (the plugin list of the gateway, as
 * plugins/index.ts is for the built-in ones) is all it takes: its config section is validated
 * with the file, its paths are in /openapi.yaml and its panel is a tab of the console; loaded
 * with `plugins.load` instead, it is documented and shown the same way. Two plugins claiming
 * the same schema, tag or panel id refuse the start.
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { openStores } from "../../../adapters/stores.ts";
import { ConfigError } from "../../../core/config/load.ts";
import { Gateway } from "../../../core/gateway.ts";
import { silentLogger } from "../../../core/log.ts";
import { definePlugin, type PluginDefinition } from "../../../core/plugins/types.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import greeter from "../../fixtures/plugins/greeter/index.ts";

type Doc = {
  tags: Array<{ name: string }>;
  paths: Record<string, Record<string, { tags: string[] }>>;
  components: { schemas: Record<string, unknown> };
};

const gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
});

async function start(yaml: string, plugins: readonly PluginDefinition[] = [...builtinPlugins, greeter]): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), "feature-folder-"));
  const gateway = await Gateway.create({
    readConfig: async () => `object_store: { dir: ${JSON.stringify(dir)} }\nrelay: { embedded: false }\n${yaml}`,
    env: {},
    // `plugins.load: [greeter]` loads the fixture as a user plugin.
    importModule: async (specifier) => {
      if (specifier !== "greeter") throw new Error(`no module "${specifier}" here`);
      return { default: greeter };
    },
    openStores,
    plugins,
    log: silentLogger,
    deferStart: true,
  });
  gateways.push(gateway);
  return gateway;
}

const get = (gateway: Gateway, path: string) => gateway.fetch(new Request(`http://gateway${path}`));

async function documentOf(gateway: Gateway): Promise<{ text: string; doc: Doc }> {
  const response = await get(gateway, "/openapi.yaml");
  expect(response.status).toBe(200);
  const text = await response.text();
  return { text, doc: parse(text) as Doc };
}

const consumers = "server: { consumer_header: X-Consumer }\n";

describe("a plugin in its own folder", () => {
  it("serves its route with its config section, defaulted and as set", async () => {
    const defaults = await start("services: []\n");
    expect(await (await get(defaults, "/-/greeting")).json()).toEqual({ greeting: "hello", times: 1 });
    const set = await start(`${consumers}greeter: { greeting: hi, times: 2 }\nservices: []\n`);
    expect(await (await get(set, "/-/greeting")).json()).toEqual({ greeting: "hi hi", times: 2 });
  });

  it("has its config section validated with the rest of the file: schema and rules, each problem with its path", async () => {
    const refusal = await start("greeter: { greeting: '', times: 9, shout: true }\nservices: []\n").catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ConfigError);
    const problems = (refusal as ConfigError).problems.join("\n");
    expect(problems).toMatch(/^greeter\.greeting: /m);
    expect(problems).toMatch(/^greeter\.times: /m);
    expect(problems).toMatch(/^greeter\.shout: /m);
    // The section's own rule, which reads another section.
    const rule = await start("greeter: { times: 2 }\nservices: []\n").catch((error: unknown) => error);
    expect((rule as ConfigError).problems).toEqual(["greeter.times: above 1 needs server.consumer_header"]);
  });

  it("puts its paths, schema and tag in /openapi.yaml, a valid document, after the built-in ones", async () => {
    const gateway = await start("services: []\n");
    const { doc } = await documentOf(gateway);
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    expect(doc.paths["/-/greeting"]?.get?.tags).toEqual(["Admin", "Greetings"]);
    expect(doc.components.schemas.Greeting).toEqual({
      type: "object",
      required: ["greeting", "times"],
      properties: { greeting: { type: "string" }, times: { type: "integer", minimum: 1 } },
    });
    expect(Object.keys(doc.paths).at(-1)).toBe("/-/greeting");
    expect(doc.tags.map((tag) => tag.name).at(-1)).toBe("Greetings");
  });

  it("leaves the built-in document as it was: only its own parts are added", async () => {
    const { text: without } = await documentOf(await start("services: []\n", builtinPlugins));
    const { doc: withIt } = await documentOf(await start("services: []\n"));
    const { "/-/greeting": _path, ...paths } = withIt.paths;
    const { Greeting: _schema, ...schemas } = withIt.components.schemas;
    const rest = { ...withIt, tags: withIt.tags.filter((tag) => tag.name !== "Greetings"), paths, components: { ...withIt.components, schemas } };
    expect(rest).toEqual(parse(without));
  });

  it("documents its paths only while its route is served: turned off, its path is left out (its schema stays, as the built-in ones do)", async () => {
    const gateway = await start("plugins: { greeter: false }\nservices: []\n");
    expect((await get(gateway, "/-/greeting")).status).toBe(404);
    const { doc } = await documentOf(gateway);
    expect(doc.paths["/-/greeting"]).toBeUndefined();
    expect(doc.components.schemas.Greeting).toBeDefined();
  });

  it("is a tab of the console, after the built-in tabs, with its script in app.js", async () => {
    const gateway = await start("services: []\n");
    const page = await (await get(gateway, "/-/console")).text();
    const tabs = [...page.matchAll(/data-tab="([^"]+)"/g)].map((match) => match[1]);
    expect(tabs).toEqual(["usage", "queues", "webhooks", "keys", "backends", "config", "batches", "greetings"]);
    const script = await (await get(gateway, "/-/console/app.js")).text();
    expect(script).toContain('// panel: greetings\ngatewayConsole.panel({\n  id: "greetings"');
  });
});

describe("a plugin loaded with plugins.load", () => {
  it("documents its routes and has its tab like a built-in one", async () => {
    const gateway = await start("plugins: { load: [greeter] }\ngreeter: { greeting: hey }\nservices: []\n", builtinPlugins);
    expect(await (await get(gateway, "/-/greeting")).json()).toEqual({ greeting: "hey", times: 1 });
    const { doc } = await documentOf(gateway);
    expect(doc.paths["/-/greeting"]?.get).toBeDefined();
    expect(doc.components.schemas.Greeting).toBeDefined();
    expect(await (await get(gateway, "/-/console")).text()).toContain('data-tab="greetings"');
  });
});

describe("contributions that collide", () => {
  const copy = (name: string, parts: Pick<PluginDefinition, "openapi" | "consolePanels">) => definePlugin({ name, ...parts, setup() {} });

  it("refuses the start when two plugins declare the same OpenAPI schema or tag, naming both", async () => {
    for (
      const [clash, expected] of [
        [
          { openapi: { schemas: greeter.openapi?.schemas } },
          'plugins "greeter" and "greeter-copy" both declare the OpenAPI schema "Greeting"; rename one of them',
        ],
        [
          { openapi: { tags: [{ name: "Jobs" }] } },
          'plugins "async-jobs" and "greeter-copy" both declare the OpenAPI tag "Jobs"; leave it out of "greeter-copy"',
        ],
      ] as const
    ) {
      const refusal = await start("services: []\n", [...builtinPlugins, greeter, copy("greeter-copy", clash)]).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(ConfigError);
      expect((refusal as ConfigError).code).toBe("GW_PLUGIN_DUPLICATE");
      expect((refusal as ConfigError).problems.join("\n")).toContain(expected);
    }
  });

  it("refuses the start when two plugins declare a console panel of the same id, naming both", async () => {
    const refusal = await start("services: []\n", [...builtinPlugins, greeter, copy("greeter-copy", { consolePanels: greeter.consolePanels })]).catch((
      error: unknown,
    ) => error);
    expect((refusal as ConfigError).code).toBe("GW_PLUGIN_DUPLICATE");
    expect((refusal as ConfigError).problems.join("\n")).toContain(
      'plugins "greeter" and "greeter-copy" both declare the console panel "greetings"; give one of them another id',
    );
  });
});
