/**
 * A model the caller may not have reads exactly as one that does not exist: a model hidden
 * from them (visibility) and one outside their API key's models get the unknown model's 404,
 * byte for byte but for the name sent, with `code: model_not_found`, on every surface (sync
 * proxy, LLM proxy, inbound Messages in its own error shape, job submissions, the model list),
 * and the models a 404 lists are only those the caller may use (a policy-denied one is not).
 * The gateway with every built-in plugin, in-process, in front of the fake LLM backend.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { builtinPlugins } from "../../../plugins/index.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { metricValue } from "../../support/prometheus.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const ADMIN = { authorization: "Bearer admin-secret", "content-type": "application/json" };

let backend: FakeBackend;
beforeAll(async () => {
  backend = await startLlmBackend();
});
afterAll(async () => await backend.stop());

// Per surface: `*-open` the caller may use, `*-vip` is hidden from it (visibility), `*-other`
// is outside its key's models; chat-denied is visible and allowed by the key, but no policy grants it.
const config = () => {
  const at = `inference_url: "${backend.url}"`;
  const chat = `provider: chat_completions, ${at}, operations: { chat: [/v1/chat/completions] }`;
  const messages = `provider: messages_api, ${at}, operations: { messages: [/v1/messages] }`;
  const rerank = `${at}, operations: { rerank: [/v1/rerank] }`;
  const ocr = `${at}, operations: { read: [/v1/read] }`;
  const vip = "visibility: { user_types: [vip] }";
  return `
server: { user_type_header: X-User-Type }
admin: { token: admin-secret }
auth: { mode: api_key, api_key: { secret: test-secret } }
policies:
  rules:
    - { match: {}, allow_models: ["*-open", "*-vip", "*-other"] }
services:
  - { type: chat, model: chat-open, ${chat} }
  - { type: chat, model: chat-vip, ${chat}, ${vip} }
  - { type: chat, model: chat-other, ${chat} }
  - { type: chat, model: chat-denied, ${chat} }
  - { type: msg, model: msg-open, ${messages} }
  - { type: msg, model: msg-vip, ${messages}, ${vip} }
  - { type: msg, model: msg-other, ${messages} }
  - { type: rerank, model: rr-open, ${rerank} }
  - { type: rerank, model: rr-vip, ${rerank}, ${vip} }
  - { type: rerank, model: rr-other, ${rerank} }
  - { type: emb, model: emb-other, provider: chat_completions, ${at}, operations: { embed: [/v1/embeddings] } }
  - { type: ocr, model: ocr-open, ${ocr}, accepted_exts: [".png"] }
  - { type: ocr, model: ocr-vip, ${ocr}, accepted_exts: [".pdf"], max_file_size_mb: 50, ${vip} }
  - { type: ocr, model: ocr-other, ${ocr}, accepted_exts: [".tif"] }
  - { type: doc, model: doc-open, ${at}, swagger_url: "${backend.url}/spec.json", operations: { d: [/v1/doc] } }
  - { type: doc, model: doc-other, ${at}, swagger_url: "${backend.url}/spec.json", operations: { d: [/v1/doc] } }
`;
};

let gw: TestRuntime;
let key: string;
afterEach(async () => await gw?.close());

async function start(): Promise<void> {
  gw = await startTestRuntime(config(), builtinPlugins, { objects: "files" });
  const created = await gw.request("/-/keys", {
    method: "POST",
    headers: ADMIN,
    body: JSON.stringify({ consumer: "team-a", user_type: "standard", models: ["*-open", "*-vip", "chat-denied"] }),
  });
  expect(created.status).toBe(201);
  key = ((await created.json()) as { key: string }).key;
}

const post = (path: string, body: unknown) =>
  gw.request(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });

/**
 * The answers for the unknown model, the hidden one and the one outside the key: each 404, and
 * the three bodies equal byte for byte once the name sent is replaced. Returns the unknown one's.
 */
async function sameAnswers(send: (model: string) => Promise<Response>, hidden: string, notAllowed: string): Promise<string> {
  const answers: string[] = [];
  for (const model of ["no-such-model", hidden, notAllowed]) {
    const response = await send(model);
    expect(response.status, model).toBe(404);
    answers.push((await response.text()).replaceAll(model, "<model>"));
  }
  expect(answers[1]).toBe(answers[0]);
  expect(answers[2]).toBe(answers[0]);
  return answers[0];
}

describe("unknown, hidden and not-allowed models read the same", () => {
  it("on the LLM proxy: model_not_found, listing only the models the caller may use", async () => {
    await start();
    const body = await sameAnswers((model) => post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] }), "chat-vip", "chat-other");
    expect(JSON.parse(body)).toEqual({
      error: {
        message: 'model "<model>" is not available on /v1/chat/completions; available models: chat-open',
        type: "not_found_error",
        code: "model_not_found",
      },
    });
    // Named, the policy-denied model is still the policy's 403 (it exists for the caller).
    expect((await post("/v1/chat/completions", { model: "chat-denied", messages: [{ role: "user", content: "hi" }] })).status).toBe(403);
    // The OpenAI client raises NotFoundError with the code.
    const openai = new OpenAI({ apiKey: key, baseURL: "http://gateway/v1", maxRetries: 0, fetch: (url, init) => gw.runtime.handle(new Request(url, init)) });
    const error = await openai.chat.completions.create({ model: "chat-other", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
  });

  it("on a path where the caller may use no model: model_not_found listing none, not a missing route", async () => {
    await start();
    const body = await sameAnswers((model) => post("/v1/embeddings", { model, input: "x" }), "emb-other", "emb-other");
    expect(JSON.parse(body)).toEqual({
      error: { message: 'model "<model>" is not available on /v1/embeddings; available models: (none)', type: "not_found_error", code: "model_not_found" },
    });
  });

  it("on the sync proxy", async () => {
    await start();
    const body = await sameAnswers((model) => post("/v1/rerank", { model, query: "q" }), "rr-vip", "rr-other");
    expect(JSON.parse(body).error).toMatchObject({
      message: 'model "<model>" is not available on /v1/rerank; available models: rr-open',
      code: "model_not_found",
    });
  });

  it("on inbound Messages, in the Messages error shape with the code", async () => {
    await start();
    const body = await sameAnswers(
      (model) => post("/v1/messages", { model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }),
      "msg-vip",
      "msg-other",
    );
    expect(JSON.parse(body)).toEqual({
      type: "error",
      error: { type: "not_found_error", message: 'model "<model>" is not available on /v1/messages; available models: msg-open', code: "model_not_found" },
    });
    const anthropic = new Anthropic({ apiKey: key, baseURL: "http://gateway", maxRetries: 0, fetch: (url, init) => gw.runtime.handle(new Request(url, init)) });
    await expect(anthropic.messages.create({ model: "msg-vip", max_tokens: 8, messages: [{ role: "user", content: "hi" }] })).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
  });

  it("on job submissions, whatever the file and wherever the model field comes: no upload rule of a hidden model shows", async () => {
    await start();
    const submit = (model: string, filename: string, fileFirst: boolean) => {
      const form = new FormData();
      if (!fileFirst) form.append("model", model);
      form.append("file", new Blob(["page"]), filename);
      if (fileFirst) form.append("model", model);
      return gw.request("/jobs/ocr", { method: "POST", headers: { "x-api-key": key }, body: form });
    };
    // .pdf is what the hidden model accepts, .tif what the one outside the key does, .png neither.
    for (const filename of ["scan.png", "scan.pdf", "scan.tif"]) {
      for (const fileFirst of [false, true]) {
        const body = await sameAnswers((model) => submit(model, filename, fileFirst), "ocr-vip", "ocr-other");
        expect(JSON.parse(body)).toEqual({
          error: {
            message: 'model "<model>" is not available for service type "ocr"; available models: ocr-open',
            type: "not_found_error",
            code: "model_not_found",
          },
        });
      }
    }
    // Still counted as hidden each time, early (model first) or late (file first).
    expect(metricValue(await gw.metrics.text(), "svc_model_hidden_total", { service_type: "ocr", model: "ocr-vip" })).toBe(6);
    expect((await submit("ocr-open", "scan.png", false)).status).toBe(202);
  });

  it("on the model list's ?model= and GET /v1/models/{model}", async () => {
    await start();
    const get = (path: string) => gw.request(path, { headers: { authorization: `Bearer ${key}` } });
    const expected = {
      error: {
        message: 'model "<model>" does not exist; available models: chat-open, msg-open, rr-open, ocr-open, doc-open',
        type: "not_found_error",
        code: "model_not_found",
      },
    };
    expect(JSON.parse(await sameAnswers((model) => get(`/v1/models?model=${model}`), "chat-vip", "chat-other"))).toEqual(expected);
    expect(JSON.parse(await sameAnswers((model) => get(`/v1/models/${model}`), "chat-vip", "chat-other"))).toEqual(expected);
  });

  it("in the generated API docs: left out of the document, their backend document is the unknown model's 404", async () => {
    await start();
    const get = (path: string) => gw.request(path, { headers: { authorization: `Bearer ${key}` } });
    const document = await (await get("/openapi.yaml")).text();
    expect(document).toContain("doc-open");
    for (const model of ["doc-other", "chat-vip", "chat-other"]) expect(document).not.toContain(model);
    const body = await sameAnswers((model) => get(`/docs/spec/doc/${model}`), "doc-other", "doc-other");
    expect(JSON.parse(body)).toEqual({ error: { message: 'no model "<model>" of service type "doc"', type: "not_found_error", code: "model_not_found" } });
    // The model the key allows goes on to its backend (whose echo is no OpenAPI document: 502).
    expect((await get("/docs/spec/doc/doc-open")).status).toBe(502);
  });
});
