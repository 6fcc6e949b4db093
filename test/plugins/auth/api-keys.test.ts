/**
 * Gateway-issued API keys (docs/api-keys.md), on the memory store and on Redis (database 23): the
 * official OpenAI and Anthropic clients authenticate with a key given as `apiKey` only, the
 * key's models and limits apply, the key never reaches the backend (which gets the key's
 * identity instead), each refusal says why and is counted, and the admin API's lifecycle
 * (create, list, get, patch, rotate, revoke) with its 400s.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { createLogger } from "../../../core/log.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { metricValue } from "../../support/prometheus.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const DB = 23;
const ADMIN = { authorization: "Bearer admin-secret", "content-type": "application/json" };

let backend: FakeBackend;
beforeAll(async () => {
  backend = await startLlmBackend();
  const client = createClient({ url: inject("redisUrl"), database: DB });
  await client.connect();
  await client.flushDb();
  await client.close();
});
afterAll(async () => await backend.stop());

const config = (mode = "api_key") => `
server: { consumer_header: X-Consumer, user_type_header: X-User-Type }
admin: { token: admin-secret }
auth: { mode: ${mode}, api_key: { secret: test-secret } }
services:
  - { type: chat, model: small-1, provider: chat_completions, inference_url: "${backend.url}", operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: large-1, provider: chat_completions, inference_url: "${backend.url}", operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: claude-small, provider: messages_api, inference_url: "${backend.url}", operations: { messages: [/v1/messages] } }
  - { type: chat, model: claude-large, provider: chat_completions, inference_url: "${backend.url}", operations: { messages: [/v1/messages] } }
`;

const stores: Array<[string, (() => Promise<KvStore>) | undefined]> = [
  ["memory", undefined],
  ["redis", async () => await RedisKv.connect({ url: inject("redisUrl"), db: DB })],
];

describe.each(stores)("API keys on the %s store", (_name, open) => {
  let gw: TestRuntime;
  let store: KvStore | undefined;
  const clock = new ManualClock(Date.now());
  afterEach(async () => {
    await gw?.close();
    await store?.close();
    store = undefined;
  });

  async function start(yaml = config()): Promise<TestRuntime> {
    store = open ? await open() : undefined;
    gw = await startTestRuntime(yaml, builtinPlugins, { clock, ...(store ? { kv: store } : {}) });
    return gw;
  }

  async function createKey(body: Record<string, unknown>): Promise<{ id: string; key: string; prefix: string } & Record<string, unknown>> {
    const res = await gw.request("/-/keys", { method: "POST", headers: ADMIN, body: JSON.stringify(body) });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; key: string; prefix: string };
  }

  const openai = (apiKey: string) =>
    new OpenAI({ apiKey, baseURL: "http://gateway/v1", maxRetries: 0, fetch: (url, init) => gw.runtime.handle(new Request(url, init)) });
  const chat = (apiKey: string, model: string) => openai(apiKey).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
  const failures = async (reason: string) => metricValue(await gw.metrics.text(), "svc_auth_failures_total", { reason });

  it("the OpenAI client authenticates with a key; the backend gets the key's identity, never the key", async () => {
    await start();
    const { key, prefix } = await createKey({ consumer: "team-a", user_type: "premium", models: ["small-*"] });
    expect(prefix).toBe(`gw-…${key.slice(-4)}`);
    const before = backend.received.length;
    const answer = await chat(key, "small-1");
    expect(answer.choices[0].message.content).toBeTypeOf("string");
    const sent = backend.received.slice(before).find((r) => r.path === "/v1/chat/completions");
    expect(sent?.headers["x-consumer"]).toBe("team-a");
    expect(sent?.headers["x-user-type"]).toBe("premium");
    expect(sent?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(sent?.headers)).not.toContain(key);
  });

  it("usage's group_by=key counts each key's requests under its id (stable across rotation), not its consumer", async () => {
    await start();
    const first = await createKey({ consumer: "team-a" });
    const second = await createKey({ consumer: "team-a" });
    await chat(first.key, "small-1");
    await chat(second.key, "small-1");
    const rotated = (await (await gw.request(`/-/keys/${second.id}/rotate`, { method: "POST", headers: ADMIN, body: "{}" })).json()) as { key: string };
    await chat(rotated.key, "small-1");
    const day = new Date(clock.now()).toISOString().slice(0, 10);
    const report = (await (await gw.request(`/-/usage/report?type=chat&period=daily&from=${day}&to=${day}&group_by=key`, { headers: ADMIN })).json()) as {
      groups: Array<{ key: string; requests: number }>;
    };
    // The store is shared by this file's other tests: only these two keys' groups.
    const mine = report.groups.filter((g) => g.key === first.id || g.key === second.id || g.key === "team-a");
    expect(mine.map((g) => [g.key, g.requests])).toEqual([[second.id, 2], [first.id, 1]]);
  });

  it("identity headers the client sends are replaced by the key's", async () => {
    await start();
    const { key } = await createKey({ consumer: "team-a" });
    const before = backend.received.length;
    const res = await gw.request("/v1/chat/completions", {
      method: "POST",
      headers: { "x-api-key": key, "x-consumer": "someone-else", "x-user-type": "admin", "content-type": "application/json" },
      body: JSON.stringify({ model: "large-1", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const sent = backend.received.slice(before).find((r) => r.path === "/v1/chat/completions");
    expect(sent?.headers["x-consumer"]).toBe("team-a");
    expect(sent?.headers["x-user-type"]).toBeUndefined();
    expect(sent?.headers["x-api-key"]).toBeUndefined();
  });

  it("models outside the key's globs are 404 and absent from /v1/models, for the OpenAI and Anthropic clients", async () => {
    await start();
    const { key } = await createKey({ consumer: "team-a", models: ["small-*"] });
    const error = await chat(key, "large-1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).message).toContain("large-1");
    const models = await openai(key).models.list();
    expect(models.data.map((m) => m.id)).toEqual(["small-1"]);
    // The Anthropic client sends the key as x-api-key.
    const anthropic = new Anthropic({ apiKey: key, baseURL: "http://gateway", maxRetries: 0, fetch: (url, init) => gw.runtime.handle(new Request(url, init)) });
    const page = await anthropic.models.list();
    expect(page.data.map((m) => m.id)).toEqual(["small-1"]);
    const refused = new Anthropic({
      apiKey: "gw-" + "x".repeat(43),
      baseURL: "http://gateway",
      maxRetries: 0,
      fetch: (url, init) => gw.runtime.handle(new Request(url, init)),
    });
    await expect(refused.models.list()).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it("a key's request rate and token budget are its own: 429 once used up", async () => {
    await start();
    const rated = await createKey({ consumer: "team-a", limits: { rate: 2, period: "1m" } });
    await chat(rated.key, "small-1");
    await chat(rated.key, "small-1");
    const third = await chat(rated.key, "small-1").catch((e: unknown) => e);
    expect(third).toBeInstanceOf(OpenAI.RateLimitError);
    expect((third as Error).message).toContain("request rate limit of this API key");
    // Another key of the same consumer has its own window.
    const other = await createKey({ consumer: "team-a" });
    await expect(chat(other.key, "small-1")).resolves.toBeDefined();

    const budget = await createKey({ consumer: "team-b", limits: { token_rate: 10, token_period: "1h" } });
    await chat(budget.key, "small-1"); // 18 tokens: crosses the budget and passes
    const tokenCounted = async () => (await gw.kv.get(`tok:key:${budget.id}`)) !== null;
    for (const deadline = Date.now() + 5000; !(await tokenCounted()) && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
    const after = await chat(budget.key, "small-1").catch((e: unknown) => e);
    expect(after).toBeInstanceOf(OpenAI.RateLimitError);
    expect((after as Error).message).toContain("token budget of this API key used up");
  });

  it("a key's groups, roles and scopes are what access policies match: the key with the grant passes, the others get 403", async () => {
    await start(
      `${config()}  - { type: chat, model: mid-1, provider: chat_completions, inference_url: "${backend.url}", operations: { chat: [/v1/chat/completions] } }
policies:
  default: deny
  rules:
    - { match: { groups: [search] }, allow_models: [small-1] }
    - { match: { roles: [admin] }, allow_models: [large-1] }
    - { match: { scopes: ["chat:write"] }, allow_models: [mid-1] }
`,
    );
    const post = (key: string, model: string) =>
      gw.request("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
      });
    const grouped = await createKey({ consumer: "team-g", groups: ["search"] });
    const admin = await createKey({ consumer: "team-r", roles: ["admin"] });
    const scoped = await createKey({ consumer: "team-s", scopes: ["chat:write"] });
    const bare = await createKey({ consumer: "team-n", groups: ["other"], roles: ["user"], scopes: ["models:read"] });
    const statuses = async (key: string) => Promise.all(["small-1", "large-1", "mid-1"].map(async (model) => (await post(key, model)).status));
    expect(await statuses(grouped.key)).toEqual([200, 403, 403]);
    expect(await statuses(admin.key)).toEqual([403, 200, 403]);
    expect(await statuses(scoped.key)).toEqual([403, 403, 200]);
    expect(await statuses(bare.key)).toEqual([403, 403, 403]);
    expect(await (await post(bare.key, "small-1")).json()).toEqual({
      error: {
        message: 'access denied: no access policy allows this caller to use model "small-1" (service type "chat"); ask the gateway operator for a grant',
        type: "permission_error",
        code: "forbidden",
      },
    });
  });

  it("the Anthropic client on /v1/messages: the key's models and request rate apply, the key never reaches the backend", async () => {
    await start();
    const { key } = await createKey({ consumer: "team-m", models: ["claude-small"], limits: { rate: 2, period: "1m" } });
    const anthropic = new Anthropic({ apiKey: key, baseURL: "http://gateway", maxRetries: 0, fetch: (url, init) => gw.runtime.handle(new Request(url, init)) });
    const ask = (model: string) => anthropic.messages.create({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    const before = backend.received.length;
    const answer = await ask("claude-small");
    expect(answer.type).toBe("message");
    const sent = backend.received.slice(before).find((r) => r.path === "/v1/messages");
    expect(sent?.headers["x-consumer"]).toBe("team-m");
    expect(sent?.headers["x-api-key"]).toBeUndefined();
    expect(JSON.stringify(sent?.headers)).not.toContain(key);
    // Outside the key's globs: as if the model did not exist, in the Messages error shape.
    await expect(ask("claude-large")).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await ask("claude-small");
    await expect(ask("claude-small")).rejects.toBeInstanceOf(Anthropic.RateLimitError);
  });

  it("missing, malformed, unknown, expired, disabled and revoked keys: 401 saying which, counted by reason", async () => {
    await start();
    const call = (headers: Record<string, string>) =>
      gw.request("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ model: "small-1", messages: [] }),
      });
    const expectRefusal = async (headers: Record<string, string>, reason: string, words: string) => {
      const before = await failures(reason);
      const res = await call(headers);
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: { message: string; type: string } };
      expect(body.error.type).toBe("authentication_error");
      expect(body.error.message).toContain(words);
      expect(await failures(reason)).toBe(before + 1);
    };
    await expectRefusal({}, "missing", "missing API key");
    await expectRefusal({ authorization: "Basic abc" }, "malformed", "malformed API key");
    await expectRefusal({ "x-api-key": "sk-not-ours" }, "malformed", "malformed API key");
    await expectRefusal({ authorization: `Bearer gw-${"a".repeat(43)}` }, "unknown", "unknown API key");

    const expiring = await createKey({ consumer: "team-a", expires_at: new Date(clock.now() + 60_000).toISOString() });
    expect((await call({ authorization: `Bearer ${expiring.key}` })).status).not.toBe(401);
    clock.advance(61_000);
    await expectRefusal({ authorization: `Bearer ${expiring.key}` }, "expired", "expired API key");

    const disabled = await createKey({ consumer: "team-a" });
    const patched = await gw.request(`/-/keys/${disabled.id}`, { method: "PATCH", headers: ADMIN, body: JSON.stringify({ enabled: false }) });
    expect(((await patched.json()) as { enabled: boolean }).enabled).toBe(false);
    await expectRefusal({ "x-api-key": disabled.key }, "disabled", "disabled API key");

    const revoked = await createKey({ consumer: "team-a" });
    const deleted = await gw.request(`/-/keys/${revoked.id}`, { method: "DELETE", headers: ADMIN });
    expect(await deleted.json()).toEqual({ id: revoked.id, status: "revoked" });
    await expectRefusal({ "x-api-key": revoked.key }, "revoked", "revoked API key");
  });

  it("rotate: a new secret, the old one valid until previous_valid_until, then refused as expired", async () => {
    await start();
    const created = await createKey({ consumer: "team-a" });
    const res = await gw.request(`/-/keys/${created.id}/rotate`, { method: "POST", headers: ADMIN, body: JSON.stringify({ grace_period: "10m" }) });
    expect(res.status).toBe(200);
    const rotated = (await res.json()) as { id: string; key: string; prefix: string; previous_valid_until: string };
    expect(rotated.id).toBe(created.id);
    expect(rotated.key).not.toBe(created.key);
    expect(Date.parse(rotated.previous_valid_until)).toBe(clock.now() + 600_000);
    await expect(chat(created.key, "small-1")).resolves.toBeDefined();
    await expect(chat(rotated.key, "small-1")).resolves.toBeDefined();
    clock.advance(600_001);
    const old = await chat(created.key, "small-1").catch((e: unknown) => e);
    expect(old).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((old as Error).message).toContain("replaced by a rotation");
    await expect(chat(rotated.key, "small-1")).resolves.toBeDefined();
  });

  it("the admin API: list with paging and a consumer filter, get, patch; never a secret or hash", async () => {
    await start();
    const a = await createKey({ consumer: "list-a", metadata: { team: "search" }, limits: { rate: 5 } });
    await createKey({ consumer: "list-b" });
    await createKey({ consumer: "list-a" });
    const list = await gw.request("/-/keys?consumer=list-a&limit=1&offset=1", { headers: ADMIN });
    const page = (await list.json()) as { total: number; limit: number; offset: number; keys: Array<Record<string, unknown>> };
    expect(page).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(page.keys).toHaveLength(1);
    const got = (await (await gw.request(`/-/keys/${a.id}`, { headers: ADMIN })).json()) as Record<string, unknown>;
    expect(got).toMatchObject({
      id: a.id,
      consumer: "list-a",
      metadata: { team: "search" },
      limits: { rate: 5, period: "1m" },
      enabled: true,
      status: "active",
    });
    for (const body of [got, ...page.keys]) {
      expect(body.key).toBeUndefined();
      expect(body.hash).toBeUndefined();
      expect(JSON.stringify(body)).not.toContain(a.key);
    }
    const patched = await gw.request(`/-/keys/${a.id}`, { method: "PATCH", headers: ADMIN, body: JSON.stringify({ models: ["large-*"], limits: null }) });
    expect(await patched.json()).toMatchObject({ models: ["large-*"] });
    expect(((await (await gw.request(`/-/keys/${a.id}`, { headers: ADMIN })).json()) as Record<string, unknown>).limits).toBeUndefined();
    expect((await gw.request("/-/keys/key_nope", { headers: ADMIN })).status).toBe(404);
  });

  it("a disabled key reads status disabled in every answer of the admin API, active again once enabled; revoked stays revoked", async () => {
    await start();
    const { id } = await createKey({ consumer: "status-a" });
    const patch = (body: unknown) => gw.request(`/-/keys/${id}`, { method: "PATCH", headers: ADMIN, body: JSON.stringify(body) });
    const statusIn = async (response: Response) => ((await response.json()) as { status: string; enabled: boolean });
    expect(await statusIn(await patch({ enabled: false }))).toMatchObject({ status: "disabled", enabled: false });
    expect(await statusIn(await gw.request(`/-/keys/${id}`, { headers: ADMIN }))).toMatchObject({ status: "disabled", enabled: false });
    const list = (await (await gw.request("/-/keys?consumer=status-a", { headers: ADMIN })).json()) as { keys: Array<{ status: string }> };
    expect(list.keys.map((k) => k.status)).toEqual(["disabled"]);
    expect(await statusIn(await patch({ enabled: true }))).toMatchObject({ status: "active", enabled: true });
    await patch({ enabled: false });
    await gw.request(`/-/keys/${id}`, { method: "DELETE", headers: ADMIN });
    expect(await statusIn(await gw.request(`/-/keys/${id}`, { headers: ADMIN }))).toMatchObject({ status: "revoked", enabled: false });
    // Created disabled.
    expect(await createKey({ consumer: "status-b", enabled: false })).toMatchObject({ status: "disabled" });
  });

  it("bad input: 400 naming each field to fix", async () => {
    await start();
    const res = await gw.request("/-/keys", {
      method: "POST",
      headers: ADMIN,
      body: JSON.stringify({ user_type: "", models: ["[a"], expires_at: "tomorrow", limits: { rate: -1, period: "soon" }, colour: "red" }),
    });
    expect(res.status).toBe(400);
    const message = ((await res.json()) as { error: { message: string } }).error.message;
    for (const words of ['unknown field "colour"', "consumer: required", "user_type:", "expires_at: must be an RFC 3339", "limits.rate:", "limits.period:"]) {
      expect(message).toContain(words);
    }
    expect((await gw.request("/-/keys", { method: "POST", headers: ADMIN, body: "{" })).status).toBe(400);
  });
});

describe("the audit log", () => {
  it("records key changes with the key id and never the secret; admin calls count no key failure", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const gw = await startTestRuntime(`${config()}\naudit_log: { enabled: true }\n`, builtinPlugins, { log });
    try {
      const created = (await (await gw.request("/-/keys", { method: "POST", headers: ADMIN, body: JSON.stringify({ consumer: "a" }) })).json()) as {
        id: string;
        key: string;
      };
      await gw.request(`/-/keys/${created.id}`, { method: "DELETE", headers: ADMIN });
      const audits = () => lines.filter((line) => line.event === "audit");
      for (const deadline = Date.now() + 5000; audits().length < 2 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
      expect(audits()).toEqual([
        expect.objectContaining({ kind: "change", method: "POST", path: "/-/keys", status: 201, key_id: created.id }),
        expect.objectContaining({ kind: "change", method: "DELETE", path: `/-/keys/${created.id}`, status: 200, key_id: created.id, job_status: "revoked" }),
      ]);
      expect(JSON.stringify(lines)).not.toContain(created.key);
      const text = await gw.metrics.text();
      for (const reason of ["missing", "malformed", "unknown"]) expect(metricValue(text, "svc_auth_failures_total", { reason })).toBe(0);
    } finally {
      await gw.close();
    }
  });
});

describe("before the switch (auth.mode none, a key secret set)", () => {
  it("/-/keys issues keys; a key a client already sends is not checked, and never forwarded", async () => {
    const gw = await startTestRuntime(config("none"), builtinPlugins);
    try {
      const created = await gw.request("/-/keys", { method: "POST", headers: ADMIN, body: JSON.stringify({ consumer: "team-a" }) });
      expect(created.status).toBe(201);
      const { key } = (await created.json()) as { key: string };
      const before = backend.received.length;
      const res = await gw.request("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "x-api-key": key, "x-consumer": "team-a", "content-type": "application/json" },
        body: JSON.stringify({ model: "large-1", messages: [{ role: "user", content: "hi" }] }),
      });
      expect(res.status).toBe(200);
      const sent = backend.received.slice(before).find((r) => r.path === "/v1/chat/completions");
      expect(sent?.headers["x-consumer"]).toBe("team-a");
      expect(JSON.stringify(sent?.headers)).not.toContain(key);
    } finally {
      await gw.close();
    }
  });
});

describe("async jobs", () => {
  it("a key's request rate counts job submissions too", async () => {
    const yaml = `${config()}  - { type: ocr, model: reader, inference_url: "http://127.0.0.1:9", operations: { read: [/v1/read] } }\n`;
    const gw = await startTestRuntime(yaml, builtinPlugins, { objects: "files" });
    try {
      const created = await gw.request("/-/keys", {
        method: "POST",
        headers: ADMIN,
        body: JSON.stringify({ consumer: "team-a", limits: { rate: 1, period: "1h" } }),
      });
      const { key } = (await created.json()) as { key: string };
      const submit = () => {
        const form = new FormData();
        form.append("file", new Blob(["page"]), "page.png");
        return gw.request("/jobs/ocr", { method: "POST", headers: { "x-api-key": key }, body: form });
      };
      expect((await submit()).status).toBe(202);
      const second = await submit();
      expect(second.status).toBe(429);
      expect(((await second.json()) as { error: { message: string } }).error.message).toContain("request rate limit of this API key");
    } finally {
      await gw.close();
    }
  });
});

describe("without an admin token", () => {
  it("/-/keys answers 403 naming admin.token", async () => {
    const gw = await startTestRuntime(config().replace("admin: { token: admin-secret }", ""), builtinPlugins);
    try {
      const res = await gw.request("/-/keys", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ consumer: "a" }) });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain("admin.token");
    } finally {
      await gw.close();
    }
  });
});

describe("config", () => {
  it("api_key mode without auth.api_key.secret refuses to start, naming the key", async () => {
    await expect(startTestRuntime(config().replace("api_key: { secret: test-secret }", ""), builtinPlugins)).rejects.toThrow(
      /auth\.api_key\.secret: required in api_key mode/,
    );
  });
});
