/**
 * Plugin-owned config: a plugin's section, per-service fields and fields in sections it does not
 * own are validated with the rest of the file in one pass (every problem, with its path), whatever
 * the order of the plugin list, and whether the plugin is on or off; a loaded plugin
 * (plugins.load) declares them the same way. A rule across plugins reads the facts they state.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Type } from "@sinclair/typebox";
import { openStores } from "../../../adapters/stores.ts";
import { ConfigError, validateConfigWith } from "../../../core/config/load.ts";
import { Gateway } from "../../../core/gateway.ts";
import { createLogger } from "../../../core/log.ts";
import { fieldsOf, type SectionFieldSet } from "../../../core/config/schema.ts";
import { configPartsOf } from "../../../core/plugins/config-parts.ts";
import { definePlugin, type PluginDefinition } from "../../../core/plugins/types.ts";

/** A plugin with a section (and a rule across it and the core) and a per-service field (with its own rule). */
const greeter = definePlugin({
  name: "greeter",
  section: {
    key: "greeter",
    schema: Type.Object({ times: Type.Integer({ minimum: 1, default: 1 }) }, { additionalProperties: false, default: {} }),
    validate: (section, config) => (section.times > 1 && config.server.consumer_header === "" ? ["greeter.times: above 1 needs server.consumer_header"] : []),
  },
  serviceFields: {
    schema: Type.Object({
      greeting: Type.Object(
        { text: Type.String({ default: "hello" }), max_words: Type.Integer({ minimum: 1, default: 3 }) },
        { additionalProperties: false, default: {} },
      ),
    }),
    validate: (service, at) => {
      const greeting = (service as unknown as { greeting: { text: string; max_words: number } }).greeting;
      return greeting.max_words >= 1 && greeting.text.split(" ").length > greeting.max_words
        ? [`${at}.greeting.text: more than ${greeting.max_words} words`]
        : [];
    },
  },
  setup() {},
});

/** A second plugin, so the order of the list can change. */
const farewell = definePlugin({
  name: "farewell",
  section: { key: "farewell", schema: Type.Object({ text: Type.String({ default: "bye" }) }, { additionalProperties: false, default: {} }) },
  serviceFields: { schema: Type.Object({ farewell_text: Type.String({ default: "bye" }) }) },
  setup() {},
});

const validate = (raw: Record<string, unknown>, plugins: readonly PluginDefinition[] = [greeter, farewell]) => validateConfigWith(raw, configPartsOf(plugins));

const badFile = {
  server: { adr: ":1" },
  greeter: { times: 2 },
  farewell: { text: { a: 1 } },
  services: [
    { type: "a", greeting: { text: "hi there" } },
    { type: "b", greeting: { max_words: 0 }, farewell_text: "ciao" },
    { type: "c", greeting: { text: "one two three four" }, extra_field: 1 },
  ],
};

describe("plugin sections and service fields", () => {
  it("defaults a plugin's section into the config and its fields into every service", () => {
    const result = validate({ services: [{ type: "a" }, { type: "b", greeting: { text: "hey" } }] });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const config = result.config as unknown as { greeter: unknown; farewell: unknown; services: { greeting: unknown; farewell_text: string }[] };
    expect(config.greeter).toEqual({ times: 1 });
    expect(config.farewell).toEqual({ text: "bye" });
    expect(config.services.map((s) => s.greeting)).toEqual([{ text: "hello", max_words: 3 }, { text: "hey", max_words: 3 }]);
    expect(config.services[0].farewell_text).toBe("bye");
  });

  it("lists every problem of the file at once, core and plugins alike, each with its path", () => {
    const result = validate(badFile);
    expect(result.ok ? [] : result.problems.sort()).toEqual(
      [
        'server.adr: unknown key; did you mean "addr"?',
        'farewell.text: expected string, got {"a":1}',
        "services[1].greeting.max_words: expected integer to be greater or equal to 1, got 0",
        "services[2].extra_field: unknown key; the keys allowed here: type, model, default, operations, inference_url, backends, inference_headers, provider, backend_model, deprecated, farewell_text, greeting",
        "greeter.times: above 1 needs server.consumer_header",
        "services[2].greeting.text: more than 3 words",
      ].sort(),
    );
  });

  it("reports the same problems in the same order whatever the order of the plugin list", () => {
    expect(validate(badFile, [farewell, greeter])).toEqual(validate(badFile, [greeter, farewell]));
  });

  it("is an unknown key when no plugin declares the field", () => {
    const result = validate({ services: [{ type: "a", greeting: {} }] }, [farewell]);
    expect(result.ok ? [] : result.problems).toEqual([
      expect.stringMatching(/^services\[0\]\.greeting: unknown key; the keys allowed here: type, model, .*, deprecated, farewell_text$/),
    ]);
  });

  it("refuses two plugins declaring the same section key or service field", () => {
    const twin = definePlugin({ ...farewell, name: "twin" });
    expect(() => validate({}, [farewell, twin])).toThrow(ConfigError);
    expect(() => validate({}, [farewell, twin])).toThrow(/the config section "farewell" is declared twice/);
    const coreField = definePlugin({ name: "core-field", serviceFields: { schema: Type.Object({ model: Type.String() }) }, setup() {} });
    expect(() => validate({}, [coreField])).toThrow(/the service field "model" is declared twice \(or names a core field\)/);
  });
});

/**
 * A plugin that adds fields to sections it does not own: `metrics` (the core's) and `greeter`
 * (another plugin's), and states a fact a rule of the greeter reads.
 */
const CountedWords = Type.Object({ counted_words: Type.Integer({ minimum: 0, default: 0 }) });
const countedWords: SectionFieldSet<typeof CountedWords> = {
  section: "metrics",
  schema: CountedWords,
  validate: (fields) => (fields.counted_words > 100 ? ["metrics.counted_words: at most 100"] : []),
};
const Loud = Type.Object({ loud: Type.Boolean({ default: false }) });
const loud: SectionFieldSet<typeof Loud> = { section: "greeter", schema: Loud, facts: (fields) => ({ loudGreetings: fields.loud }) };
const counter = definePlugin({ name: "counter", sectionFields: [countedWords, loud], setup() {} });

declare module "../../../core/config/schema.ts" {
  interface ConfigFacts {
    loudGreetings: boolean;
  }
}

/** The greeter, with a rule on the counter's fact (it never reads the counter's field). */
const greeterWithRule = definePlugin({
  ...greeter,
  section: {
    ...greeter.section!,
    validate: (section, _config, facts) => (section.times > 1 && facts.loudGreetings === true ? ["greeter.times: a loud greeting is said once"] : []),
  },
});

describe("fields a plugin adds to sections it does not own", () => {
  const check = (raw: Record<string, unknown>, plugins: readonly PluginDefinition[] = [greeterWithRule, counter]) =>
    validateConfigWith(raw, configPartsOf(plugins));

  it("defaults them into the section, the core's or another plugin's, read with fieldsOf", () => {
    const result = check({});
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(fieldsOf(result.config, countedWords).counted_words).toBe(0);
    expect(result.config.metrics).toEqual({ default_metrics: true, counted_words: 0 });
    expect(fieldsOf(result.config, loud).loud).toBe(false);
    expect((result.config as unknown as { greeter: unknown }).greeter).toEqual({ times: 1, loud: false });
  });

  it("validates them with the rest of the file, each problem with its path, and offers them among the keys allowed", () => {
    const result = check({ metrics: { counted_words: 500, countd_words: 1 }, greeter: { loud: "yes" } });
    expect(result.ok ? [] : result.problems.sort()).toEqual(
      [
        'metrics.countd_words: unknown key; did you mean "counted_words"?',
        "metrics.counted_words: at most 100",
        'greeter.loud: expected boolean, got "yes"',
      ].sort(),
    );
  });

  it("gives a plugin's rule the facts another plugin states, whatever the order of the plugin list", () => {
    const file = { greeter: { times: 2, loud: true } };
    expect(check(file)).toEqual({ ok: false, problems: ["greeter.times: a loud greeting is said once"] });
    expect(check(file, [counter, greeterWithRule])).toEqual(check(file));
    expect(check({ greeter: { times: 2 } }).ok).toBe(true);
    // Without the plugin that states it, the fact is absent (and the field unknown).
    expect(check({ greeter: { times: 2 } }, [greeterWithRule]).ok).toBe(true);
  });

  it("makes a section of the fields alone when no installed plugin declares it", () => {
    const result = check({ greeter: { loud: true } }, [counter]);
    expect(result.ok && (result.config as unknown as { greeter: unknown }).greeter).toEqual({ loud: true });
  });

  it("refuses a field the section already has, and fields added to services or plugins", () => {
    const twice = definePlugin({
      name: "twice",
      sectionFields: [{ section: "greeter", schema: Type.Object({ times: Type.Integer({ default: 1 }) }) }],
      setup() {},
    });
    expect(() => check({}, [greeterWithRule, twice])).toThrow(/the field "greeter.times" is declared twice/);
    const core = definePlugin({
      name: "core",
      sectionFields: [{ section: "metrics", schema: Type.Object({ default_metrics: Type.Boolean({ default: true }) }) }],
      setup() {},
    });
    expect(() => check({}, [core])).toThrow(/the field "metrics.default_metrics" is declared twice/);
    for (const section of ["services", "plugins"]) {
      const wrong = definePlugin({ name: "wrong", sectionFields: [{ section, schema: Type.Object({ x: Type.Integer({ default: 1 }) }) }], setup() {} });
      expect(() => check({}, [wrong])).toThrow(`fields cannot be added to "${section}"`);
    }
  });
});

describe("through the gateway", () => {
  const gateways: Gateway[] = [];
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.close()));
  });
  const dir = mkdtempSync(join(tmpdir(), "plugin-parts-"));

  async function start(text: string, plugins: readonly PluginDefinition[], loaded: Record<string, PluginDefinition> = {}) {
    const gateway = await Gateway.create({
      readConfig: async () => `object_store: { dir: ${JSON.stringify(dir)} }\n${text}`,
      env: {},
      importModule: async (path) => ({ default: loaded[path] }),
      openStores,
      plugins,
      log: createLogger({ write: () => {} }),
    });
    gateways.push(gateway);
    return gateway;
  }

  async function problemsOf(promise: Promise<unknown>): Promise<string[]> {
    try {
      await promise;
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems;
    }
    throw new Error("expected the start to be refused");
  }

  it("validates the section of a plugin that is turned off", async () => {
    const off = "plugins: { greeter: false }\n";
    expect(await problemsOf(start(`${off}greeter: { times: 0 }\n`, [greeter]))).toEqual([
      "greeter.times: expected integer to be greater or equal to 1, got 0",
    ]);
    await start(`${off}greeter: { times: 1 }\n`, [greeter]);
  });

  it("a plugin from plugins.load adds its section and its service fields, validated by their rules, read through api.section and the service", async () => {
    let seen: unknown[] = [];
    const loaded = definePlugin({
      ...greeter,
      name: "loaded-greeter",
      setup(api) {
        seen = [api.section, ...api.config.services.map((s) => (s as unknown as { greeting: unknown }).greeting)];
      },
    });
    const text =
      "plugins: { load: [greeter.ts] }\nserver: { consumer_header: X-Consumer }\ngreeter: { times: 2 }\nservices:\n  - { type: a, inference_url: 'http://127.0.0.1:9', greeting: { text: yo } }\n";
    await start(text, [], { "greeter.ts": loaded });
    expect(seen).toEqual([{ times: 2 }, { text: "yo", max_words: 3 }]);
    expect(await problemsOf(start(text.replace("text: yo", "text: a b c d"), [], { "greeter.ts": loaded }))).toEqual([
      "services[0].greeting.text: more than 3 words",
    ]);
    // Its section's own rule runs too, as a built-in section's does.
    expect(await problemsOf(start(text.replace("server: { consumer_header: X-Consumer }\n", ""), [], { "greeter.ts": loaded }))).toEqual([
      "greeter.times: above 1 needs server.consumer_header",
    ]);
  });
});
