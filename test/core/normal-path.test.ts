import { describe, expect, it } from "vitest";
import { unnormalizedPath } from "../../core/gateway.ts";

describe("unnormalizedPath", () => {
  it("refuses dot segments, literal or encoded, and encoded unreserved characters", () => {
    for (
      const target of [
        "/v1/../-/reload",
        "/v1/%2e%2e/-/reload",
        "/v1/.%2E/x",
        "/./health",
        "/v1/..",
        "http://h/v1/%2E%2e/-/reload",
        "/%2d/reload",
        "/v%31/echo",
        "/a/%7euser",
      ]
    ) {
      expect(unnormalizedPath(target), target).toBeDefined();
    }
  });
  it("accepts normal paths, encoded slashes and reserved characters, and dots inside segments", () => {
    for (
      const target of [
        "/health",
        "/v2/models/org%2Fmodel/infer",
        "/v1/models/gpt-4.1",
        "/v1/a..b/.hidden",
        "/jobs/t/abc?x=../..",
        "http://h:1/v1/echo%20x",
        "/",
        "/v1/echo?cb=http://x/../..",
        "http://h/v1/echo?cb=https://x/%2e%2e",
      ]
    ) {
      expect(unnormalizedPath(target), target).toBeUndefined();
    }
  });
});
