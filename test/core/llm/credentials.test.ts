/**
 * `withCredentials`: what a backend with credentials of its own is sent (docs/providers.md#credentials).
 */
import { describe, expect, it } from "vitest";
import { withCredentials } from "../../../core/llm/credentials.ts";

describe("withCredentials", () => {
  it("drops every credential header the client sent and sets the backend's own", () => {
    const forwarded = {
      authorization: "Bearer callers-gateway-key",
      "x-api-key": "callers-key",
      "api-key": "other",
      "x-goog-api-key": "another",
      "content-type": "application/json",
      "x-request-id": "r-1",
    };
    expect(withCredentials(forwarded, { "x-goog-api-key": "backend-key" })).toEqual({
      "content-type": "application/json",
      "x-request-id": "r-1",
      "x-goog-api-key": "backend-key",
    });
  });

  it("with no credentials given (a request about to be signed), only drops them; the input is left as it was", () => {
    const forwarded = { authorization: "Bearer k", accept: "*/*" };
    expect(withCredentials(forwarded, {})).toEqual({ accept: "*/*" });
    expect(forwarded).toEqual({ authorization: "Bearer k", accept: "*/*" });
  });
});
