import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { asBytes } from "../../../core/llm/json.ts";
import { type BedrockBackendSettings, prepareBedrockRequest, signBedrockRequest } from "../../../plugins/provider-bedrock/index.ts";
import { createCredentialChain } from "../../../plugins/provider-bedrock/credentials.ts";
import { converseToChatError } from "../../../plugins/provider-bedrock/converse-errors.ts";
import {
  BEDROCK_TEST_API_KEY,
  BEDROCK_TEST_CREDENTIALS,
  BEDROCK_TEST_REGION,
  BEDROCK_TEST_SESSION_CREDENTIALS,
  type FakeBedrock,
  startBedrockBackend,
} from "../../fixtures/bedrock-backend.ts";

const MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0";
const body = new TextEncoder().encode(JSON.stringify({ messages: [{ role: "user", content: [{ text: "hi" }] }] }));

let fake: FakeBedrock;
beforeAll(async () => {
  fake = await startBedrockBackend();
});
afterAll(() => fake.stop());
afterEach(() => {
  vi.unstubAllEnvs();
});

const settings = (extra: Partial<BedrockBackendSettings> = {}): BedrockBackendSettings => ({ region: BEDROCK_TEST_REGION, url: fake.url, ...extra });

async function send(prepared: { url: string; headers: Record<string, string> }, bytes: Uint8Array = body) {
  const response = await fetch(prepared.url, { method: "POST", headers: prepared.headers, body: asBytes(bytes) });
  return {
    status: response.status,
    errorType: response.headers.get("x-amzn-errortype"),
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

const prepare = (extra: Partial<BedrockBackendSettings> = {}, now?: Date) =>
  prepareBedrockRequest({ settings: settings(extra), modelId: MODEL, stream: false, body, headers: { "x-request-id": "r-1" }, ...(now ? { now } : {}) });

describe("SigV4 signing against the fake Bedrock (which recomputes every signature)", () => {
  it("a correctly signed request is accepted", async () => {
    const prepared = await prepare({ credentials: BEDROCK_TEST_CREDENTIALS });
    expect(prepared.url).toBe(`${fake.url}/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse`);
    expect(prepared.headers.authorization).toMatch(
      new RegExp(
        `^AWS4-HMAC-SHA256 Credential=${BEDROCK_TEST_CREDENTIALS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-request-id, Signature=[0-9a-f]{64}$`,
      ),
    );
    const answer = await send(prepared);
    expect(answer.status).toBe(200);
    expect(answer.body.stopReason).toBe("end_turn");
    const last = fake.received[fake.received.length - 1];
    expect(last).toMatchObject({ auth: "sigv4", operation: "converse", modelId: MODEL, status: 200 });
  });

  it("a tampered body, a changed signed header or a wrong secret is refused with 403 InvalidSignatureException", async () => {
    const prepared = await prepare({ credentials: BEDROCK_TEST_CREDENTIALS });
    const tampered = new TextEncoder().encode(JSON.stringify({ messages: [{ role: "user", content: [{ text: "HI" }] }] }));
    const refused = await send(prepared, tampered);
    expect(refused.status).toBe(403);
    expect(refused.errorType).toMatch(/^InvalidSignatureException:/);
    expect(refused.body.message).toMatch(/^The request signature we calculated does not match the signature you provided/);
    // As a client of the gateway sees it.
    expect(converseToChatError(refused.status, refused.body, refused.headers).error).toMatchObject({
      type: "authentication_error",
      code: "InvalidSignatureException",
    });

    expect((await send({ ...prepared, headers: { ...prepared.headers, "x-request-id": "r-2" } })).errorType).toMatch(/^InvalidSignatureException:/);
    const wrongSecret = await prepare({ credentials: { ...BEDROCK_TEST_CREDENTIALS, secretAccessKey: "not-the-secret" } });
    expect((await send(wrongSecret)).errorType).toMatch(/^InvalidSignatureException:/);
  });

  it("an unknown key id, a missing session token or an old signature is refused as AWS refuses them", async () => {
    const unknown = await send(await prepare({ credentials: { accessKeyId: "AKIAUNKNOWN", secretAccessKey: "x" } }));
    expect([unknown.status, unknown.errorType?.split(":")[0], unknown.body.message]).toEqual([
      403,
      "UnrecognizedClientException",
      "The security token included in the request is invalid.",
    ]);

    const session = await prepare({ credentials: BEDROCK_TEST_SESSION_CREDENTIALS });
    expect(session.headers["x-amz-security-token"]).toBe(BEDROCK_TEST_SESSION_CREDENTIALS.sessionToken);
    expect((await send(session)).status).toBe(200);
    const { "x-amz-security-token": _token, ...withoutToken } = session.headers;
    expect((await send({ ...session, headers: withoutToken })).errorType).toMatch(/^UnrecognizedClientException:/);

    const old = await send(await prepare({ credentials: BEDROCK_TEST_CREDENTIALS }, new Date(Date.now() - 10 * 60_000)));
    expect([old.status, old.errorType?.split(":")[0]]).toEqual([403, "InvalidSignatureException"]);
    expect(old.body.message).toMatch(/^Signature expired/);

    const none = await send({ url: `${fake.url}/model/m/converse`, headers: { "content-type": "application/json" } });
    expect([none.status, none.errorType?.split(":")[0]]).toEqual([403, "MissingAuthenticationTokenException"]);
  });

  it("signs with the region of the backend, not of the host", async () => {
    const otherRegion = await send(await prepare({ region: "eu-west-1", credentials: BEDROCK_TEST_CREDENTIALS }));
    expect(otherRegion.status).toBe(403);
    expect(otherRegion.body.message).toBe("Credential should be scoped to correct service and region ('bedrock', 'us-east-1').");
  });

  it("a Bedrock API key goes as a bearer token, unsigned", async () => {
    const prepared = await prepare({ apiKey: BEDROCK_TEST_API_KEY, credentials: BEDROCK_TEST_CREDENTIALS });
    expect(prepared.headers.authorization).toBe(`Bearer ${BEDROCK_TEST_API_KEY}`);
    expect(prepared.headers).not.toHaveProperty("x-amz-date");
    expect((await send(prepared)).status).toBe(200);
    expect(fake.received[fake.received.length - 1].auth).toBe("api_key");
    const wrong = await send(await prepare({ apiKey: "ABSKnot-the-key" }));
    expect([wrong.status, wrong.errorType?.split(":")[0]]).toEqual([403, "UnrecognizedClientException"]);
  });

  it("takes credentials from the standard AWS chain (here its environment step) when the backend names none", async () => {
    vi.stubEnv("AWS_ACCESS_KEY_ID", BEDROCK_TEST_SESSION_CREDENTIALS.accessKeyId);
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", BEDROCK_TEST_SESSION_CREDENTIALS.secretAccessKey);
    vi.stubEnv("AWS_SESSION_TOKEN", BEDROCK_TEST_SESSION_CREDENTIALS.sessionToken);
    const prepared = await prepareBedrockRequest({ settings: settings(), modelId: MODEL, stream: false, body, headers: {}, chain: createCredentialChain() });
    expect(prepared.headers.authorization).toContain(`Credential=${BEDROCK_TEST_SESSION_CREDENTIALS.accessKeyId}/`);
    expect((await send(prepared)).status).toBe(200);
  });

  it("says what to set when the chain finds no credentials", async () => {
    for (
      const name of [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
      ]
    ) {
      vi.stubEnv(name, undefined);
    }
    vi.stubEnv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials");
    vi.stubEnv("AWS_CONFIG_FILE", "/nonexistent/config");
    vi.stubEnv("AWS_EC2_METADATA_DISABLED", "true");
    await expect(prepareBedrockRequest({ settings: settings(), modelId: MODEL, stream: false, body, headers: {}, chain: createCredentialChain() })).rejects
      .toThrow(
        /^no AWS credentials were found for Bedrock: set the backend's api_key, or give the gateway AWS credentials/,
      );
  });

  it("signBedrockRequest leaves the caller's headers as they are and adds the signature headers", async () => {
    const signed = await signBedrockRequest({
      method: "post",
      url: `${fake.url}/model/m/converse`,
      headers: { "Content-Type": "application/json" },
      body,
      region: BEDROCK_TEST_REGION,
      credentials: async () => BEDROCK_TEST_CREDENTIALS,
      now: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)),
    });
    expect(Object.keys(signed).sort()).toEqual(["authorization", "content-type", "x-amz-content-sha256", "x-amz-date"]);
    expect(signed["x-amz-date"]).toBe("20260102T030405Z");
    expect(signed["content-type"]).toBe("application/json");
  });
});
