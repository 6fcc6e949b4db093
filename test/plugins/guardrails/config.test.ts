/**
 * A bad `guardrails` list is refused at start and on reload, every problem with its path: an
 * invalid regex, one that can backtrack catastrophically, an unknown entity, an unknown kind,
 * a duplicate name; the running rules stay in force after a refused reload. A kind a plugin
 * registers (`guardrailKinds`) is a known kind.
 */
import { describe, expect, it } from "vitest";
import { openStores } from "../../../adapters/stores.ts";
import { Gateway } from "../../../core/gateway.ts";
import { silentLogger } from "../../../core/log.ts";
import { definePlugin } from "../../../core/plugins/types.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { regexProblem } from "../../../plugins/guardrails/regex-safety.ts";
import { fakeUpstream } from "./fake-backend.ts";
import shouting from "../../../examples/guardrail-kind.ts";

const SERVICES = `
services:
  - { type: chat, model: gpt, provider: chat_completions, inference_url: "http://backend", operations: { chat: [/v1/chat/completions] } }
`;

const GOOD = `
guardrails:
  - { name: no-codenames, kind: regex, on: [input], action: block, patterns: ["PROJECT-[0-9]+"] }
${SERVICES}`;

const BAD = `
guardrails:
  - { name: broken, kind: regex, on: [input], action: block, patterns: ["ok", "(unclosed"] }
  - { name: slow, kind: regex, on: [input], action: block, patterns: ["(a+)+$"] }
  - { name: pii, kind: pii, on: [input], action: mask, entities: [email, passport] }
  - { name: pii, kind: pii, on: [output], action: mask, entities: [email] }
${SERVICES}`;

const UNKNOWN_KIND = `
guardrails:
  - { name: ok, kind: regex, on: [input], action: block, patterns: ["x"] }
  - { name: mystery, kind: telepathy, on: [input], action: block }
${SERVICES}`;

const PATHS = [
  "guardrails[0].patterns[1]: invalid regular expression",
  "guardrails[1].patterns[0]: the group ending at character 4 repeats a part that is itself repeated without bound",
  'guardrails[2].entities[1]: unknown entity "passport"',
  'guardrails[3].name: "pii" is already the name of guardrails[2]',
];

function gatewayOn(config: { text: string }, plugins = builtinPlugins): Promise<Gateway> {
  return Gateway.create({
    readConfig: async () => config.text,
    env: {},
    importModule: async (specifier) => {
      throw new Error(`no module ${specifier}`);
    },
    openStores,
    plugins,
    log: silentLogger,
    fetch: fakeUpstream().fetch,
    lookupHost: async () => ["127.0.0.1"],
  });
}

const chat = (gateway: Gateway, content: string) =>
  gateway.fetch(
    new Request("http://gateway/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt", messages: [{ role: "user", content }] }),
    }),
  );

describe("a bad guardrails list", () => {
  it("is refused at start, every problem with its path", async () => {
    const error = await gatewayOn({ text: BAD }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    for (const path of PATHS) expect(error.message).toContain(path);
  });

  it("an unknown kind is refused at start with its path", async () => {
    const error = await gatewayOn({ text: UNKNOWN_KIND }).catch((e) => e);
    expect(error.message).toContain('guardrails[1].kind: unknown kind "telepathy"; known kinds: regex, pii, http');
  });

  it("is refused on reload with the same paths, and the running rules stay", async () => {
    const config = { text: GOOD };
    const gateway = await gatewayOn(config);
    try {
      config.text = BAD;
      const refused = await gateway.reload();
      expect(refused.ok).toBe(false);
      const problems = refused.ok ? [] : refused.problems.join("\n");
      for (const path of PATHS) expect(problems).toContain(path);
      config.text = UNKNOWN_KIND;
      const unknown = await gateway.reload();
      expect(unknown.ok ? "" : unknown.problems.join("\n")).toContain('guardrails[1].kind: unknown kind "telepathy"');
      expect((await chat(gateway, "PROJECT-1")).status).toBe(400);
      // A good reload applies at once.
      config.text = SERVICES;
      expect((await gateway.reload()).ok).toBe(true);
      expect((await chat(gateway, "PROJECT-1")).status).toBe(200);
    } finally {
      await gateway.close();
    }
  });

  it("a kind a plugin registers is known", async () => {
    const telepathy = definePlugin({
      name: "guardrail-telepathy",
      dependsOn: ["guardrails"],
      setup(api) {
        api.use("guardrailKinds").register({
          name: "telepathy",
          check: (texts) => (texts.some((t) => t.includes("think")) ? { action: "block" } : { action: "allow" }),
        });
      },
    });
    const gateway = await gatewayOn({ text: UNKNOWN_KIND }, [...builtinPlugins, telepathy]);
    try {
      const refused = await chat(gateway, "I think so");
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { type: "guardrail_blocked", code: "mystery" } });
      expect((await chat(gateway, "fine")).status).toBe(200);
    } finally {
      await gateway.close();
    }
  });
});

describe("the example kind (examples/guardrail-kind.ts)", () => {
  it("refuses a shouted prompt with its reason", async () => {
    const config = `
guardrails:
  - { name: no-shouting, kind: shouting, on: [input], action: block, settings: { max_ratio: 0.6 } }
${SERVICES}`;
    const gateway = await gatewayOn({ text: config }, [...builtinPlugins, shouting]);
    try {
      const refused = await chat(gateway, "WHY IS NOTHING WORKING TODAY");
      expect(await refused.json()).toMatchObject({
        error: { type: "guardrail_blocked", code: "no-shouting", message: expect.stringContaining("please do not shout") },
      });
      expect((await chat(gateway, "Why is nothing working today?")).status).toBe(200);
    } finally {
      await gateway.close();
    }
  });
});

describe("regular expressions that can backtrack catastrophically", () => {
  it("are refused: nested unbounded repetition and backreferences; ordinary patterns pass", () => {
    for (const pattern of ["(a+)+", "(a*)*b", "(\\w+\\s?)*$", "(x+){2,}", "(a)\\1", "((ab)+c)*"]) expect(regexProblem(pattern), pattern).toBeDefined();
    for (const pattern of ["PROJECT-[0-9]+", "(foo|bar)+", "(ab){1,3}", "[(a+)+]", "\\(a+\\)+", "sk-[A-Za-z0-9]{20,}"]) {
      expect(regexProblem(pattern), pattern).toBeUndefined();
    }
  });
});
