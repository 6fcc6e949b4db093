/**
 * The core's identify step (identity headers as sent: blank, repeated), which asks the auth
 * plugin's `auth` service (when there is one) whether a credential names the caller.
 */
import { describe, expect, it } from "vitest";
import { validateConfig } from "../../../plugins/config.ts";
import type { CallerAuth } from "../../../core/pipeline/caller-auth.ts";
import { RequestState } from "../../../core/pipeline/context.ts";
import { headerIdentity } from "../../../core/pipeline/identity.ts";
import { slotOf } from "../../../core/pipeline/request-slot.ts";

function configOf(raw: Record<string, unknown>) {
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(`invalid test config: ${result.problems.join("; ")}`);
  return result.config;
}

describe("headerIdentity", () => {
  const server = { consumer_header: "X-Consumer", user_type_header: "X-User-Type", priority_header: "X-Priority" };
  const config = configOf({ server });
  /** Callers named by a token (the auth plugin's service in oauth2 mode); `undefined`: no auth plugin, the headers name them. */
  const oauth2: CallerAuth = { mode: "oauth2", credentialNamesCaller: true, missingConsumerMessage: (advice) => advice };
  const none = undefined;

  /** Runs the step on a request with `headers`; `repeats` stands for the server adapter's count of raw header lines. */
  async function identify(auth: CallerAuth | undefined, headers: Record<string, string>, repeats: Record<string, number> = {}) {
    const request = new Request("http://gateway/v1/x", { headers });
    slotOf(request).timesSent = (name) => repeats[name] ?? (headers[name] === undefined ? 0 : 1);
    const ctx = new RequestState(request, "sync", "", 0);
    const answer = await headerIdentity(config, () => auth)(ctx);
    const error = answer ? { status: answer.status, ...((await answer.json()) as { error: object }) } : undefined;
    return { error, principal: ctx.principal, priority: ctx.priority };
  }
  const refusal = (message: string) => ({ status: 400, error: { message, type: "invalid_request_error", code: "invalid_request" } });

  it("refuses a blank consumer or user type, which names nobody and must not pass for an absent header", async () => {
    expect((await identify(none, { "x-consumer": "" })).error).toEqual(refusal("the X-Consumer header is empty: send a consumer name or leave the header out"));
    expect((await identify(none, { "x-consumer": "ann", "x-user-type": " " })).error).toEqual(
      refusal("the X-User-Type header is empty: send a user type or leave the header out"),
    );
    expect(await identify(none, { "x-consumer": " ann ", "x-user-type": "pro" })).toMatchObject({
      error: undefined,
      principal: { consumer: "ann", userType: "pro" },
    });
    const absent = await identify(none, {});
    expect([absent.error, absent.principal.consumer, absent.principal.userType, absent.priority]).toEqual([undefined, undefined, undefined, false]);
  });

  it("takes a blank priority header as present: the header marks a request by being there", async () => {
    expect(await identify(none, { "x-priority": "" })).toMatchObject({ error: undefined, priority: true });
  });

  it("refuses an identity header the adapter saw more than once, naming it as configured", async () => {
    for (const [name, header] of [["x-consumer", "X-Consumer"], ["x-user-type", "X-User-Type"], ["x-priority", "X-Priority"]]) {
      const { error } = await identify(none, { [name]: "a, b" }, { [name]: 2 });
      expect(error).toEqual(
        refusal(
          `the ${header} header was sent 2 times; send it once (a proxy in front of the gateway must replace the client's ${header} header, not add another)`,
        ),
      );
    }
  });

  it("with oauth2 checks only the priority header: the consumer and user type headers are ignored there", async () => {
    expect((await identify(oauth2, { "x-consumer": "", "x-user-type": "" })).error).toBeUndefined();
    expect((await identify(oauth2, { "x-consumer": "a, b" }, { "x-consumer": 2 })).error).toBeUndefined();
    expect((await identify(oauth2, { "x-priority": "1, 1" }, { "x-priority": 2 })).error?.status).toBe(400);
  });
});
