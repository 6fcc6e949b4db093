/** The advice given to a caller whose request needs their consumer, in the terms of the auth mode in use. */
import { describe, expect, it } from "vitest";
import { validateConfig } from "../../../core/config/load.ts";
import { missingConsumerMessage } from "../../../core/pipeline/identity.ts";

function configOf(raw: Record<string, unknown>) {
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(`invalid test config: ${result.problems.join("; ")}`);
  return result.config;
}

describe("missingConsumerMessage", () => {
  const advice = "send the X-Consumer header naming the consumer whose usage to show";

  it("keeps the header advice where the consumer comes from the header (none, proxy)", () => {
    expect(missingConsumerMessage(configOf({ server: { consumer_header: "X-Consumer" } }), advice)).toBe(advice);
    expect(missingConsumerMessage(configOf({ server: { consumer_header: "X-Consumer" }, auth: { mode: "proxy" } }), advice)).toBe(advice);
  });

  it("speaks of the token claim in oauth2 mode, where the header is ignored", () => {
    const oauth2 = (claims: Record<string, string>) => configOf({ server: { consumer_header: "X-Consumer" }, auth: { mode: "oauth2", oauth2: { keys: [], claims } } });
    expect(missingConsumerMessage(oauth2({}), advice)).toBe("send a bearer token whose sub claim names the consumer");
    expect(missingConsumerMessage(oauth2({ consumer: "" }), advice)).toBe(
      "bearer tokens name no consumer here: set auth.oauth2.claims.consumer to the token claim that names the consumer",
    );
  });
});
