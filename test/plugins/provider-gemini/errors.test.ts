import { describe, expect, it } from "vitest";
import { googleToChatError, isContextWindowError, retryAfterOf, retryDelayMs } from "../../../plugins/provider-gemini/google-errors.ts";
import { createVertexAiProvider, geminiProvider } from "../../../plugins/provider-gemini/index.ts";
import { messagesApiProvider } from "../../../plugins/provider-messages-api/index.ts";

const vertexAiProvider = createVertexAiProvider(messagesApiProvider, { clock: { now: () => Date.now() } });

const context = { stream: false, now: () => 0, newId: () => "id" };
const google = (code: number, status: string, message: string, details?: unknown[]) => ({ error: { code, message, status, ...(details ? { details } : {}) } });

const quota = google(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", [
  { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaId: "GenerateRequestsPerMinutePerProjectPerModel" }] },
  { "@type": "type.googleapis.com/google.rpc.Help", links: [] },
  { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "32.4s" },
]);

describe("Google errors in the chat-completions shape", () => {
  it.each([
    [400, google(400, "INVALID_ARGUMENT", "Invalid value at 'contents'"), "invalid_request_error", "INVALID_ARGUMENT"],
    [401, google(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."), "authentication_error", "UNAUTHENTICATED"],
    [403, google(403, "PERMISSION_DENIED", "Permission denied."), "permission_error", "PERMISSION_DENIED"],
    [404, google(404, "NOT_FOUND", "models/nope is not found"), "not_found_error", "NOT_FOUND"],
    [429, quota, "rate_limit_error", "RESOURCE_EXHAUSTED"],
    [500, google(500, "INTERNAL", "Internal error."), "backend_error", "INTERNAL"],
    [503, google(503, "UNAVAILABLE", "The model is overloaded."), "backend_error", "UNAVAILABLE"],
  ])("HTTP %i becomes type and code of Google's status", (status, body, type, code) => {
    const message = (body.error as { message: string }).message;
    expect(geminiProvider.createTranslator(context).translateError?.(status, body)).toEqual({ error: { message, type, code } });
  });

  it("reads an error wrapped in an array (a stream request without alt=sse) and says what it got when it is not Google's", () => {
    expect(googleToChatError(503, [google(503, "UNAVAILABLE", "overloaded")])).toEqual({
      error: { message: "overloaded", type: "backend_error", code: "UNAVAILABLE" },
    });
    expect(googleToChatError(502, "<html>Bad Gateway</html>")).toEqual({ error: { message: "<html>Bad Gateway</html>", type: "backend_error", code: null } });
    expect(googleToChatError(500, "")).toEqual({ error: { message: "the backend answered HTTP 500", type: "backend_error", code: null } });
  });

  it("reads the retry delay of a RetryInfo detail, rounded up to whole seconds for Retry-After", () => {
    expect(retryDelayMs(quota)).toBe(32_400);
    expect(retryAfterOf(quota)).toBe("33");
    expect(retryAfterOf([quota])).toBe("33");
    expect(
      retryDelayMs(
        google(429, "RESOURCE_EXHAUSTED", "x", [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: { seconds: 2, nanos: 500_000_000 } }]),
      ),
    ).toBe(2500);
    expect(retryAfterOf(google(429, "RESOURCE_EXHAUSTED", "no details"))).toBeUndefined();
    expect(retryAfterOf(google(429, "RESOURCE_EXHAUSTED", "x", [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "soon" }]))).toBeUndefined();
    expect(retryAfterOf("not json")).toBeUndefined();
  });

  it("tells a prompt over the context window from other 400s, in the Gemini API's, Vertex AI's and (Claude on Vertex) Anthropic's words", () => {
    const studio = google(400, "INVALID_ARGUMENT", "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).");
    const vertex = google(
      400,
      "INVALID_ARGUMENT",
      "Unable to submit request because the input token count is 1251952 but model only supports up to 1048576. Reduce the input token count and try again.",
    );
    const claude = { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" } };
    expect(isContextWindowError(400, studio)).toBe(true);
    expect(isContextWindowError(400, [studio])).toBe(true);
    expect(isContextWindowError(400, vertex)).toBe(true);
    expect(isContextWindowError(400, claude)).toBe(true);
    expect(isContextWindowError(400, google(400, "INVALID_ARGUMENT", "Invalid value at 'contents'"))).toBe(false);
    expect(isContextWindowError(429, quota)).toBe(false);
    expect(isContextWindowError(500, studio)).toBe(false);
    expect(googleToChatError(400, studio)).toEqual({
      error: { message: (studio.error as { message: string }).message, type: "invalid_request_error", code: "context_length_exceeded" },
    });
  });

  it("vertex_ai takes both shapes for a Claude model: Vertex's own (Google's) and the model's (Anthropic's)", () => {
    const translator = vertexAiProvider.createTranslator(context);
    translator.translateRequest?.({ model: "claude-sonnet-4@20250514", messages: [{ role: "user", content: "hi" }] });
    expect(translator.translateError?.(429, google(429, "RESOURCE_EXHAUSTED", "Quota exceeded."))).toEqual({
      error: { message: "Quota exceeded.", type: "rate_limit_error", code: "RESOURCE_EXHAUSTED" },
    });
    expect(translator.translateError?.(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })).toEqual({
      error: { message: "Overloaded", type: "overloaded_error" },
    });
  });
});
