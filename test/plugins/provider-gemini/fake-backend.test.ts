/**
 * The fake Google backend refuses what Google refuses, so the translation tests against it mean
 * something: unknown fields, missing keys, a Gemini 3 function call without its signature,
 * Vertex's Messages differences; and it frames a stream without alt=sse as Google does.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeGoogle, startGeminiBackend } from "../../fixtures/gemini-backend.ts";

let google: FakeGoogle;
beforeAll(async () => {
  google = await startGeminiBackend({ apiKey: "k", vertexApiKey: "vk" });
});
afterAll(() => google.stop());

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = { "x-goog-api-key": "k" },
): Promise<{ status: number; body: unknown; type: string | null }> {
  const response = await fetch(`${google.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text), type: response.headers.get("content-type") };
}

const contents = [{ role: "user", parts: [{ text: "hi" }] }];

describe("the fake Google backend", () => {
  it("refuses fields Google does not know, as Google words it", async () => {
    const out = await post("/v1beta/models/gemini-2.5-flash:generateContent", { model: "gemini-2.5-flash", contents });
    expect(out.status).toBe(400);
    expect(out.body).toEqual({
      error: { code: 400, message: 'Invalid JSON payload received. Unknown name "model": Cannot find field.', status: "INVALID_ARGUMENT" },
    });
    const nested = await post("/v1beta/models/gemini-2.5-flash:generateContent", { contents, generationConfig: { max_tokens: 3 } });
    expect((nested.body as { error: { message: string } }).error.message).toBe(
      `Invalid JSON payload received. Unknown name "max_tokens" at 'generation_config': Cannot find field.`,
    );
  });

  it("wants the AI Studio key: 403 without one, 400 API_KEY_INVALID with a wrong one; ?key= works too", async () => {
    expect((await post("/v1beta/models/m:generateContent", { contents }, {})).status).toBe(403);
    expect((await post("/v1beta/models/m:generateContent", { contents }, { "x-goog-api-key": "wrong" })).body).toMatchObject({
      error: { status: "INVALID_ARGUMENT", details: [{ reason: "API_KEY_INVALID" }] },
    });
    expect((await post("/v1beta/models/m:generateContent?key=k", { contents }, {})).status).toBe(200);
  });

  it("refuses a key sent with an Authorization header that holds no token it issued", async () => {
    const out = await post("/v1beta/models/m:generateContent", { contents }, { "x-goog-api-key": "k", authorization: "Bearer caller-key" });
    expect(out.status).toBe(401);
    expect(out.body).toMatchObject({ error: { code: 401, status: "UNAUTHENTICATED" } });
  });

  it("refuses a Gemini 3 function-call turn without its thought signature", async () => {
    const history = [...contents, { role: "model", parts: [{ functionCall: { name: "f", args: {} } }] }, {
      role: "user",
      parts: [{ functionResponse: { name: "f", response: { output: "x" } } }],
    }];
    const out = await post("/v1beta/models/gemini-3-pro-preview:generateContent", { contents: history });
    expect(out.status).toBe(400);
    expect((out.body as { error: { message: string } }).error.message).toMatch(/^Function call is missing a thought_signature in functionCall parts/);
    expect((await post("/v1beta/models/gemini-2.5-flash:generateContent", { contents: history })).status).toBe(200);
  });

  it("streams one JSON array without alt=sse, server-sent events with it", async () => {
    const array = await post("/v1beta/models/m:streamGenerateContent", { contents });
    expect(array.type).toMatch(/^application\/json/);
    expect(Array.isArray(array.body)).toBe(true);
    const response = await fetch(`${google.url}/v1beta/models/m:streamGenerateContent?alt=sse`, {
      method: "POST",
      headers: { "x-goog-api-key": "k" },
      body: JSON.stringify({ contents }),
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const text = await response.text();
    expect(text.startsWith("data: {")).toBe(true);
    expect(text.endsWith("\r\n\r\n")).toBe(true);
    expect(text).not.toContain("[DONE]");
  });

  it("checks Vertex's Messages differences for Claude and wants a token or its key", async () => {
    const path = "/v1/projects/test-project/locations/us-central1/publishers/anthropic/models/claude-x:rawPredict";
    expect((await post(path, { messages: [], max_tokens: 5 }, {})).status).toBe(401);
    const withModel = await post(path, { anthropic_version: "vertex-2023-10-16", model: "claude-x", messages: [], max_tokens: 5 }, { "x-goog-api-key": "vk" });
    expect(withModel.body).toEqual({ type: "error", error: { type: "invalid_request_error", message: "model: Extra inputs are not permitted" } });
    const noVersion = await post(path, { messages: [], max_tokens: 5 }, { "x-goog-api-key": "vk" });
    expect(noVersion.status).toBe(400);
  });
});
