/** The gateway's own error responses on the Messages routes, rewritten into the Messages error shape. */
import { describe, expect, it } from "vitest";
import { errors } from "../../../core/errors.ts";
import { asMessagesError } from "../../../plugins/protocol-messages/errors.ts";

describe("asMessagesError", () => {
  it("rewrites a gateway error body, keeping the status and headers (Retry-After) and dropping the old length", async () => {
    const refused = errors.budgetExceeded("token budget used up", 30).toResponse();
    refused.headers.set("content-length", "999");
    const out = await asMessagesError(refused);
    expect(out.status).toBe(429);
    expect(out.headers.get("retry-after")).toBe("30");
    expect(out.headers.get("content-length")).toBeNull();
    expect(await out.json()).toEqual({ type: "error", error: { type: "rate_limit_error", message: "token budget used up", code: "budget_exceeded" } });
  });

  it("maps a gateway type the Messages API does not know by the status", async () => {
    const out = await asMessagesError(errors.badGateway("no backend answered").toResponse());
    expect(await out.json()).toEqual({ type: "error", error: { type: "api_error", message: "no backend answered", code: "backend_error" } });
  });

  it("leaves successes, non-JSON bodies and bodies already in the Messages shape alone", async () => {
    const ok = new Response("{}", { status: 200, headers: { "content-type": "application/json" } });
    const text = new Response("bad gateway", { status: 502, headers: { "content-type": "text/plain" } });
    const messages = new Response(JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "busy" } }), {
      status: 529,
      headers: { "content-type": "application/json" },
    });
    for (const response of [ok, text, messages]) expect(await asMessagesError(response)).toBe(response);
  });
});
