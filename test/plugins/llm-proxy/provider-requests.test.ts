/**
 * What the providers by name send, asserted on the built request with no traffic: the built-in
 * plugins in one runtime with an injected `fetch` that records each request and answers a canned
 * chat completion (or Messages answer). `openai` and the OpenAI-compatible hosts without `url`
 * go to their public addresses with `Authorization: Bearer <api_key>`; `azure_openai` to the
 * deployment URL with `api-key`; `anthropic` to Anthropic's Messages endpoint with `x-api-key`
 * and `anthropic-version`. A client's own credential never goes along with a backend's key.
 * And the settings a provider needs are refused at start, with their paths.
 */
import { afterEach, describe, expect, it } from "vitest";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

interface Sent {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

const CHAT_ANSWER = {
  id: "chatcmpl-canned",
  object: "chat.completion",
  created: 1700000000,
  model: "canned",
  choices: [{ index: 0, message: { role: "assistant", content: "canned" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
};
const MESSAGES_ANSWER = {
  id: "msg_canned",
  type: "message",
  role: "assistant",
  model: "canned",
  content: [{ type: "text", text: "canned" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 3, output_tokens: 1 },
};

const ops = "operations: { chat: [/v1/chat/completions] }";
const CONFIG = `
services:
  - { type: chat, model: gpt, provider: openai, backends: [{ api_key: "\${OPENAI_API_KEY}", model: gpt-4o-mini }], ${ops} }
  - { type: chat, model: llama-groq, provider: groq, backends: [{ api_key: gsk-test, model: llama-3.3-70b-versatile }], ${ops} }
  - { type: chat, model: routed, provider: openrouter, backends: [{ api_key: sk-or-test, model: meta-llama/llama-3.1-8b-instruct }], ${ops} }
  - type: chat
    model: azure-gpt
    provider: azure_openai
    backends: [{ resource: my-resource, deployment: gpt-4o-prod, api_version: "2024-10-21", api_key: azure-key }]
    ${ops}
  - { type: chat, model: claude, provider: anthropic, backends: [{ api_key: sk-ant-test, model: claude-sonnet-4-5 }], ${ops} }
`;

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

async function setUp(yaml = CONFIG) {
  const sent: Sent[] = [];
  const fetchRecorded: typeof fetch = async (input, init) => {
    const url = String(input);
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, name) => (headers[name] = value));
    sent.push({ url, headers, body: JSON.parse(new TextDecoder().decode(init?.body as Uint8Array)) as Record<string, unknown> });
    const answer = url.endsWith("/v1/messages") ? MESSAGES_ANSWER : CHAT_ANSWER;
    return new Response(JSON.stringify(answer), { headers: { "content-type": "application/json" } });
  };
  const started = await startTestRuntime(yaml, builtinPlugins, { fetch: fetchRecorded, env: { OPENAI_API_KEY: "sk-from-env" } });
  runtimes.push(started);
  const chat = (model: string, headers: Record<string, string> = {}) =>
    started.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
    });
  return { sent, chat };
}

/** The problems a start refuses `yaml` with (fails the test when it starts). */
async function startProblems(yaml: string): Promise<string[]> {
  try {
    runtimes.push(await startTestRuntime(yaml, builtinPlugins));
  } catch (error) {
    const problems = (error as { problems?: unknown }).problems;
    return Array.isArray(problems) ? problems.map(String) : [String(error)];
  }
  throw new Error("the runtime started");
}

describe("the request each provider by name builds", () => {
  it("openai without url: https://api.openai.com/v1/chat/completions with the backend's key as a bearer token", async () => {
    const { sent, chat } = await setUp();
    const response = await chat("gpt", { authorization: "Bearer the-callers-gateway-key" });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-gateway-model")).toBe("gpt");
    expect(sent).toHaveLength(1);
    expect(sent[0].url).toBe("https://api.openai.com/v1/chat/completions");
    // The env-expanded key replaces the caller's own.
    expect(sent[0].headers.authorization).toBe("Bearer sk-from-env");
    expect(sent[0].body).toMatchObject({ model: "gpt-4o-mini" });
  });

  it.each([
    ["llama-groq", "https://api.groq.com/openai/v1/chat/completions", "Bearer gsk-test"],
    ["routed", "https://openrouter.ai/api/v1/chat/completions", "Bearer sk-or-test"],
  ])("the compatible host of %s: %s", async (model, url, authorization) => {
    const { sent, chat } = await setUp();
    expect((await chat(model)).status).toBe(200);
    expect(sent).toMatchObject([{ url, headers: { authorization } }]);
  });

  it("azure_openai: the deployment URL with api-version, the key in api-key and no client credential", async () => {
    const { sent, chat } = await setUp();
    expect((await chat("azure-gpt", { authorization: "Bearer the-callers-gateway-key" })).status).toBe(200);
    expect(sent).toHaveLength(1);
    expect(sent[0].url).toBe("https://my-resource.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21");
    expect(sent[0].headers["api-key"]).toBe("azure-key");
    expect(sent[0].headers.authorization).toBeUndefined();
  });

  it("anthropic: https://api.anthropic.com/v1/messages with x-api-key and anthropic-version", async () => {
    const { sent, chat } = await setUp();
    const response = await chat("claude", { "x-api-key": "the-callers-gateway-key", authorization: "Bearer the-callers-gateway-key" });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ choices: [{ message: { content: "canned" } }] });
    expect(sent).toHaveLength(1);
    expect(sent[0].url).toBe("https://api.anthropic.com/v1/messages");
    expect(sent[0].headers).toMatchObject({ "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" });
    expect(sent[0].headers.authorization).toBeUndefined();
    expect(sent[0].body).toMatchObject({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] });
  });
});

describe("a provider's settings, checked at start", () => {
  it("refuses an unknown backend provider, naming the registered ones", async () => {
    const problems = await startProblems(`
services:
  - { type: chat, model: m, provider: openai, backends: [{ api_key: k }, { provider: open_ai, url: "http://x.test" }], ${ops} }
`);
    expect(problems).toEqual([
      expect.stringMatching(
        /^services\[0\]\.backends\[1\]\.provider: "open_ai" \(model "m"\) is not a provider any plugin registered \(registered providers: .*\bopenai\b.*\)/,
      ),
    ]);
  });

  it("refuses bedrock without a region", async () => {
    const problems = await startProblems(`
services:
  - { type: chat, model: m, provider: bedrock, backends: [{ model: "anthropic.claude-3-5-haiku-20241022-v1:0" }], ${ops} }
`);
    expect(problems).toEqual([expect.stringMatching(/^services\[0\]\.backends\[0\]\.region: required/)]);
  });

  it("refuses azure_openai without a deployment", async () => {
    const problems = await startProblems(`
services:
  - { type: chat, model: m, provider: azure_openai, backends: [{ resource: my-resource, api_key: k }], ${ops} }
`);
    expect(problems).toEqual([expect.stringMatching(/^services\[0\]\.backends\[0\]\.deployment: required/)]);
  });
});
