import { describe, expect, it } from "vitest";
import { geminiBackendAuth, geminiBackendUrl, vertexBackendAuth, vertexBackendUrl } from "../../../plugins/provider-gemini/google-backends.ts";
import { ManualClock } from "../../../core/clock.ts";
import { geminiRequestUrl, vertexBaseUrl, vertexPublisherOf, vertexRequestUrl } from "../../../plugins/provider-gemini/urls.ts";

describe("Google AI Studio URLs", () => {
  it("puts the model and the method in the path, alt=sse on streams", () => {
    expect(geminiRequestUrl({ model: "gemini-2.5-flash", stream: false })).toBe(
      "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
    );
    expect(geminiRequestUrl({ model: "gemini-2.5-flash", stream: true })).toBe(
      "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    );
    expect(geminiRequestUrl({ model: "models/gemini-2.5-pro", stream: false })).toBe(
      "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent",
    );
    expect(geminiRequestUrl({ model: "tunedModels/my-model-123", stream: false })).toBe(
      "https://generativelanguage.googleapis.com/v1beta/tunedModels/my-model-123:generateContent",
    );
    expect(geminiBackendUrl({ url: "http://127.0.0.1:9/" }, "gemini-2.5-flash", true)).toBe(
      "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    );
  });

  it("refuses a model name that would leave its place in the URL", () => {
    for (const model of ["../other", "a?key=x", "a#b", "a b", "", "a/b", "x:generateContent"]) {
      expect(() => geminiRequestUrl({ model, stream: false }), model).toThrow(/cannot (go into a Google API URL|contain "\/")/);
    }
  });

  it("sends the key in x-goog-api-key, and says what to set without one", async () => {
    expect(await geminiBackendAuth({ api_key: "k" }).headers()).toEqual({ "x-goog-api-key": "k" });
    expect(() => geminiBackendAuth({})).toThrow("a gemini backend needs api_key: a Google AI Studio API key");
  });
});

describe("Vertex AI URLs", () => {
  const at = { project: "my-project", location: "us-central1" };

  it("builds the regional, global and multi-regional addresses as Google's SDK does", () => {
    expect(vertexBaseUrl("us-central1")).toBe("https://us-central1-aiplatform.googleapis.com");
    expect(vertexBaseUrl("global")).toBe("https://aiplatform.googleapis.com");
    expect(vertexBaseUrl("eu")).toBe("https://aiplatform.eu.rep.googleapis.com");
    expect(vertexRequestUrl({ model: "gemini-2.5-pro", stream: false, ...at })).toBe(
      "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent",
    );
    expect(vertexRequestUrl({ model: "gemini-2.5-pro", stream: true, project: "my-project", location: "global" })).toBe(
      "https://aiplatform.googleapis.com/v1/projects/my-project/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
    );
  });

  it("sends Anthropic's models to rawPredict / streamRawPredict under publishers/anthropic", () => {
    for (const model of ["claude-sonnet-4@20250514", "anthropic/claude-sonnet-4@20250514", "publishers/anthropic/models/claude-sonnet-4@20250514"]) {
      expect(vertexPublisherOf(model)).toBe("anthropic");
      expect(vertexRequestUrl({ model, stream: false, ...at })).toBe(
        "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict",
      );
    }
    expect(vertexRequestUrl({ model: "claude-opus-4-1@20250805", stream: true, project: "p", location: "global" })).toBe(
      "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/anthropic/models/claude-opus-4-1@20250805:streamRawPredict",
    );
  });

  it("takes a full resource, express mode without a project, and a backend url in place of the address", () => {
    expect(vertexRequestUrl({ model: "projects/p/locations/europe-west4/endpoints/123", stream: false, ...at })).toBe(
      "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/endpoints/123:generateContent",
    );
    expect(vertexRequestUrl({ model: "gemini-2.5-flash", stream: true })).toBe(
      "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    );
    expect(vertexBackendUrl({ ...at, url: "http://127.0.0.1:9" }, "gemini-2.5-flash", false)).toBe(
      "http://127.0.0.1:9/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
    );
  });

  it("refuses what it cannot address, saying what to set", () => {
    expect(() => vertexRequestUrl({ model: "claude-sonnet-4@20250514", stream: false })).toThrow(
      "needs a project and a location on Vertex AI (express mode serves Google's models only)",
    );
    expect(() => vertexRequestUrl({ model: "gemini-2.5-pro", stream: false, project: "p" })).toThrow(
      'Vertex AI needs a location (e.g. us-central1 or global) with project "p"',
    );
    expect(() => vertexRequestUrl({ model: "meta/llama-4", stream: false, ...at })).toThrow(
      "is published by \"meta\": the vertex_ai provider speaks to Google's models and Anthropic's only",
    );
    expect(() => vertexRequestUrl({ model: "gemini", stream: false, project: "p/../q", location: "us" })).toThrow("cannot go into a Google API URL");
    expect(() => vertexRequestUrl({ model: "a/b/c", stream: false, ...at })).toThrow('model "a/b/c" is not a Vertex AI model name');
  });

  it("authenticates with an API key when one is set, else needs project and location for OAuth", async () => {
    expect(await vertexBackendAuth({ api_key: "k" }, { clock: new ManualClock() }).headers()).toEqual({ "x-goog-api-key": "k" });
    expect(() => vertexBackendAuth({ project: "p" }, { clock: new ManualClock() })).toThrow(
      "a vertex_ai backend needs project and location (OAuth from credentials_file or Application Default Credentials), or api_key",
    );
  });
});
