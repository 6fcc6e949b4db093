/**
 * `GET /v1/models/{model}`, as the official OpenAI client's `models.retrieve` asks it: the
 * model's own entry of `GET /v1/models` for a model the caller may see, else the unknown
 * model's 404 (`model_not_found`). In-process, every built-in plugin, the fake LLM backend.
 */
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { builtinPlugins } from "../../../plugins/index.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

let backend: FakeBackend;
beforeAll(async () => {
  backend = await startLlmBackend();
});
afterAll(async () => await backend.stop());

// A `/v1/*` wildcard passthrough too: the gateway's own model routes still answer.
const config = () => `
server: { user_type_header: X-User-Type }
services:
  - { type: chat, model: chat-small, provider: chat_completions, backend_model: small-v2, inference_url: "${backend.url}", operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: meta/llama-3, provider: chat_completions, inference_url: "${backend.url}", operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: chat-staff, provider: chat_completions, inference_url: "${backend.url}", operations: { chat: [/v1/chat/completions] }, visibility: { user_types: [staff] } }
  - { type: raw, model: passthrough, inference_url: "${backend.url}", operations: { any: ["/v1/*"] } }
`;

let gw: TestRuntime;
afterEach(async () => await gw?.close());

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({
    apiKey: "unused",
    baseURL: "http://gateway/v1",
    maxRetries: 0,
    defaultHeaders: headers,
    fetch: (url, init) => gw.runtime.handle(new Request(url, init)),
  });

describe("GET /v1/models/{model}", () => {
  it("answers the model's entry of the list, for the OpenAI client's models.retrieve", async () => {
    gw = await startTestRuntime(config(), builtinPlugins);
    const list = await client().models.list();
    const before = backend.received.length;
    for (const id of ["chat-small", "meta/llama-3", "passthrough"]) {
      const model = await client().models.retrieve(id);
      expect(model).toEqual(list.data.find((entry) => entry.id === id));
    }
    expect(await client().models.retrieve("chat-small")).toEqual({
      id: "chat-small",
      object: "model",
      owned_by: "gateway",
      service_type: "chat",
      provider: "chat_completions",
      backend_model: "small-v2",
      capabilities: { supports_sync: true, supports_streaming: true, deprecated: false },
    });
    // The gateway answers: no backend is asked (the wildcard passthrough included).
    expect(backend.received.length).toBe(before);
    // An alias with a `/` sent as it is.
    const raw = await gw.request("/v1/models/meta/llama-3");
    expect(raw.status).toBe(200);
    expect(((await raw.json()) as { id: string }).id).toBe("meta/llama-3");
    // And the generated API document describes the route.
    expect(await (await gw.request("/openapi.yaml")).text()).toContain("/v1/models/{model}:");
  });

  it("answers a hidden or unknown model with the same 404, code model_not_found; the audience gets the entry", async () => {
    gw = await startTestRuntime(config(), builtinPlugins);
    const bodies: string[] = [];
    for (const id of ["chat-staff", "no-such-model"]) {
      const error = await client().models.retrieve(id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
      const response = await gw.request(`/v1/models/${id}`);
      expect(response.status).toBe(404);
      bodies.push((await response.text()).replaceAll(id, "<model>"));
    }
    expect(bodies[0]).toBe(bodies[1]);
    expect(JSON.parse(bodies[0])).toEqual({
      error: {
        message: 'model "<model>" does not exist; available models: chat-small, meta/llama-3, passthrough',
        type: "not_found_error",
        code: "model_not_found",
      },
    });
    expect((await client({ "x-user-type": "staff" }).models.retrieve("chat-staff")).id).toBe("chat-staff");
  });
});
