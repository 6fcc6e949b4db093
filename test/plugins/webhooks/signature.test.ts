import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { signatureHeader } from "../../../plugins/webhooks/signature.ts";

describe("X-Svc-Signature", () => {
  it('is t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>', async () => {
    const body = JSON.stringify({ job_id: "j1", status: "completed", result: { text: "héllo" } });
    const header = await signatureHeader("s3cret", 1_767_225_600, body);
    const expected = createHmac("sha256", "s3cret").update(`1767225600.${body}`).digest("hex");
    expect(header).toBe(`t=1767225600,v1=${expected}`);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });

  it("changes with the timestamp, the body and the secret", async () => {
    const mac = (header: string) => header.split(",v1=")[1];
    const base = await signatureHeader("a", 100, "{}");
    expect(mac(await signatureHeader("a", 101, "{}"))).not.toBe(mac(base));
    expect(mac(await signatureHeader("a", 100, "{ }"))).not.toBe(mac(base));
    expect(mac(await signatureHeader("b", 100, "{}"))).not.toBe(mac(base));
    // Same inputs, same signature (the key cache does not leak between secrets).
    expect(await signatureHeader("a", 100, "{}")).toBe(base);
  });
});
