/**
 * The auth plugin's `auth` service: how callers are named, and the advice given to a caller
 * whose request needs their consumer, in the terms of the auth mode in use.
 */
import { describe, expect, it } from "vitest";
import { callerAuth } from "../../../plugins/auth/caller-auth.ts";
import { validateConfig } from "../../../plugins/config.ts";

function authOf(raw: Record<string, unknown>) {
  const result = validateConfig({ server: { consumer_header: "X-Consumer" }, auth: raw });
  if (!result.ok) throw new Error(`invalid test config: ${result.problems.join("; ")}`);
  return callerAuth(result.config.auth);
}

describe("the auth service", () => {
  const advice = "send the X-Consumer header naming the consumer whose usage to show";

  it("keeps the header advice where the consumer comes from the header (none, proxy)", () => {
    for (const mode of ["none", "proxy"]) {
      const auth = authOf({ mode });
      expect([auth.mode, auth.credentialNamesCaller, auth.missingConsumerMessage(advice)]).toEqual([mode, false, advice]);
    }
  });

  it("speaks of the token claim in oauth2 mode, where the header is ignored", () => {
    const oauth2 = (claims: Record<string, string>) => authOf({ mode: "oauth2", oauth2: { keys: [], claims } });
    expect(oauth2({}).credentialNamesCaller).toBe(true);
    expect(oauth2({}).missingConsumerMessage(advice)).toBe("send a bearer token whose sub claim names the consumer");
    expect(oauth2({ consumer: "" }).missingConsumerMessage(advice)).toBe(
      "bearer tokens name no consumer here: set auth.oauth2.claims.consumer to the token claim that names the consumer",
    );
  });

  it("asks for a gateway API key in api_key mode", () => {
    const auth = authOf({ mode: "api_key", api_key: { secret: "s" } });
    expect([auth.credentialNamesCaller, auth.missingConsumerMessage(advice)]).toEqual([
      true,
      "send a gateway API key (Authorization: Bearer <key> or x-api-key: <key>)",
    ]);
  });
});
