/**
 * Vertex AI's OAuth tokens through google-auth-library against the fake Google
 * (test/fixtures/gemini-backend.ts): a service account's signed JWT exchanged at the token
 * endpoint the key file names, Application Default Credentials from
 * GOOGLE_APPLICATION_CREDENTIALS and from the metadata server; one token per lifetime, replaced
 * when the gateway's clock reaches its last five minutes, one fetch for concurrent requests.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { chatToGeminiRequest } from "../../../plugins/provider-gemini/chat-to-gemini.ts";
import { GoogleAccessTokens, REFRESH_MARGIN_MS } from "../../../plugins/provider-gemini/google-access-tokens.ts";
import { vertexBackendAuth } from "../../../plugins/provider-gemini/google-backends.ts";
import { vertexRequestUrl } from "../../../plugins/provider-gemini/urls.ts";
import { type FakeGoogle, startGeminiBackend } from "../../fixtures/gemini-backend.ts";
import { createServiceAccount } from "../../fixtures/google-oauth.ts";

const LIFETIME_S = 3600;
let google: FakeGoogle;
let dir: string;
let keyFile: string;

beforeAll(async () => {
  google = await startGeminiBackend({ tokenLifetimeSeconds: LIFETIME_S });
  const account = createServiceAccount(google.tokenUri);
  google.addServiceAccount(account);
  dir = mkdtempSync(join(tmpdir(), "vertex-auth-"));
  keyFile = join(dir, "key.json");
  writeFileSync(keyFile, JSON.stringify(account.keyFile));
});

afterAll(async () => {
  await google.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Env variables a test changes, put back after it. */
const saved = new Map<string, string | undefined>();
function setEnv(name: string, value: string | undefined): void {
  if (!saved.has(name)) saved.set(name, process.env[name]);
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
afterEach(() => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  saved.clear();
});

/** A generateContent call to the fake's Vertex AI with `headers`: its status. */
async function vertexStatus(headers: Record<string, string>): Promise<number> {
  const url = vertexRequestUrl({ model: "gemini-2.5-flash", stream: false, project: "test-project", location: "us-central1", baseUrl: google.url });
  const body = chatToGeminiRequest({ messages: [{ role: "user", content: "hi" }] });
  const response = await fetch(url, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) });
  await response.arrayBuffer();
  return response.status;
}

describe("Vertex AI tokens from a service-account key file", () => {
  it("exchanges the key's signed JWT at the key file's token_uri once, and the fake's Vertex AI takes the token", async () => {
    const before = google.tokenGrants;
    const tokens = new GoogleAccessTokens({ projectId: "test-project", keyFile, clock: new ManualClock() });
    const first = await tokens.token();
    expect(first).toMatch(/^ya29\.fake-token-\d+$/);
    expect(await tokens.token()).toBe(first);
    expect(await tokens.headers()).toEqual({ authorization: `Bearer ${first}` });
    expect(google.tokenGrants - before).toBe(1);
    const tokenRequest = google.received.filter((r) => r.path === "/token").at(-1);
    expect(tokenRequest?.body).toMatchObject({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer" });
    expect(await vertexStatus({ authorization: `Bearer ${first}` })).toBe(200);
  });

  it("fetches a new token once the gateway's clock is within five minutes of the expiry, not before", async () => {
    const clock = new ManualClock();
    const tokens = new GoogleAccessTokens({ projectId: "test-project", keyFile, clock });
    const before = google.tokenGrants;
    const first = await tokens.token();
    // The lifetime is measured on the system clock as the token arrives: a few ms of slack.
    clock.advance(LIFETIME_S * 1000 - REFRESH_MARGIN_MS - 1000);
    expect(await tokens.token()).toBe(first);
    expect(google.tokenGrants - before).toBe(1);
    clock.advance(1000);
    const second = await tokens.token();
    expect(second).not.toBe(first);
    expect(google.tokenGrants - before).toBe(2);
    expect(await vertexStatus({ authorization: `Bearer ${second}` })).toBe(200);
  });

  it("keeps using a token in its last minutes when a new one cannot be had, and fails once it has expired", async () => {
    let down = false;
    const clock = new ManualClock();
    // The library's own requests go through this fetch: the token endpoint can be taken down.
    const flaky: typeof fetch = (input, init) => (down ? Promise.reject(new TypeError("fetch failed: connection refused")) : fetch(input, init));
    const tokens = new GoogleAccessTokens({ projectId: "test-project", keyFile, clock, fetch: flaky });
    const first = await tokens.token();
    down = true;
    clock.advance(LIFETIME_S * 1000 - 60_000);
    expect(await tokens.token()).toBe(first);
    clock.advance(60_000);
    await expect(tokens.token()).rejects.toThrow(/^could not get a Google access token for Vertex AI: .*connection refused/);
    down = false;
    expect(await tokens.token()).not.toBe(first);
  });

  it("shares one token request among concurrent callers", async () => {
    const before = google.tokenGrants;
    const tokens = new GoogleAccessTokens({ projectId: "test-project", keyFile, clock: new ManualClock() });
    const all = await Promise.all(Array.from({ length: 5 }, () => tokens.token()));
    expect(new Set(all).size).toBe(1);
    expect(google.tokenGrants - before).toBe(1);
  });

  it("says why when the token endpoint refuses the key, and tries again on the next request", async () => {
    const stranger = createServiceAccount(google.tokenUri, "stranger@test-project.iam.gserviceaccount.com");
    const tokens = new GoogleAccessTokens({ projectId: "test-project", credentials: stranger.keyFile, clock: new ManualClock() });
    await expect(tokens.token()).rejects.toThrow(/^could not get a Google access token for Vertex AI: invalid_grant: no service account stranger@/);
    google.addServiceAccount(stranger);
    expect(await tokens.token()).toMatch(/^ya29\.fake-token-/);
  });

  it("the fake refuses a request without a token it issued: 401 UNAUTHENTICATED", async () => {
    expect(await vertexStatus({})).toBe(401);
    expect(await vertexStatus({ authorization: "Bearer ya29.made-up" })).toBe(401);
  });

  it("vertexBackendAuth builds the token cache from credentials_file", async () => {
    const auth = vertexBackendAuth({ project: "test-project", location: "us-central1", credentials_file: keyFile }, { clock: new ManualClock() });
    const headers = await auth.headers();
    expect(headers.authorization).toMatch(/^Bearer ya29\.fake-token-/);
    expect(await vertexStatus(headers)).toBe(200);
  });
});

describe("Vertex AI tokens from Application Default Credentials", () => {
  it("reads the key file GOOGLE_APPLICATION_CREDENTIALS names", async () => {
    setEnv("GOOGLE_APPLICATION_CREDENTIALS", keyFile);
    const before = google.tokenGrants;
    const tokens = new GoogleAccessTokens({ projectId: "test-project", clock: new ManualClock() });
    expect(await tokens.token()).toMatch(/^ya29\.fake-token-/);
    expect(google.tokenGrants - before).toBe(1);
  });

  it("asks the metadata server when there is no key file, once per token lifetime", async () => {
    setEnv("GOOGLE_APPLICATION_CREDENTIALS", undefined);
    // No gcloud login on this machine counts: its config directory is an empty one.
    setEnv("CLOUDSDK_CONFIG", dir);
    setEnv("GCE_METADATA_HOST", google.metadataHost);
    const clock = new ManualClock();
    const tokens = new GoogleAccessTokens({ projectId: "test-project", clock });
    const first = await tokens.token();
    expect(first).toMatch(/^ya29\.metadata-token-\d+$/);
    expect(await tokens.token()).toBe(first);
    expect(google.metadataGrants).toBe(1);
    const tokenRequest = google.received.filter((r) => r.path.endsWith("/service-accounts/default/token")).at(-1);
    expect(tokenRequest?.headers["metadata-flavor"]).toBe("Google");
    expect(tokenRequest?.query.scopes).toBe("https://www.googleapis.com/auth/cloud-platform");
    expect(await vertexStatus({ authorization: `Bearer ${first}` })).toBe(200);
    clock.advance(LIFETIME_S * 1000);
    expect(await tokens.token()).not.toBe(first);
    expect(google.metadataGrants).toBe(2);
  });
});
