/**
 * Access policies in-process (docs/design.md#access-policies): 403 on denial, the decision metric,
 * security events and group quotas.
 */
import { afterEach, describe, expect, it } from "vitest";
import { windowIncrement } from "../../../core/stores/atomic-ops.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { countTokens, tokenKey } from "../../../plugins/policies/quotas.ts";
import { type AccessRuntime, accessRuntime, metricValue } from "../access-harness.ts";

const open: AccessRuntime[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
});
async function start(yaml: string, options: Parameters<typeof accessRuntime>[1] = {}): Promise<AccessRuntime> {
  const runtime = await accessRuntime(yaml, options);
  open.push(runtime);
  return runtime;
}

const base = (policies: string) => `
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
auth:
  mode: proxy
  proxy:
    groups_header: X-Groups
services:
  - type: chat
    model: gpt-small
    provider: openai
    operations: {chat: [/v1/chat/completions]}
  - type: chat
    model: gpt-large
    provider: openai
    operations: {chat: [/v1/chat/completions]}
  - type: ocr
    model: reader
    operations: {read: [/v1/ocr]}
policies:
${policies}`;

const chat = (rt: AccessRuntime, model: string, headers: Record<string, string> = {}) => rt.request("/v1/chat/completions", { headers, body: { model } });

describe("policy decisions", () => {
  const rules = `  rules:
    - match: {groups: [ml]}
      allow_models: [gpt-*]
      allow_service_types: [chat]
    - match: {consumers: [ocr-bot]}
      allow_models: ['*']
      allow_service_types: [ocr]
`;

  it("allows what a matching rule grants and answers 403 otherwise", async () => {
    const rt = await start(base(rules));
    expect((await chat(rt, "gpt-large", { "x-consumer": "alice", "x-groups": "ml" })).status).toBe(200);
    const denied = await chat(rt, "gpt-large", { "x-consumer": "bob", "x-groups": "sales" });
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({
      error: {
        message: 'access denied: no access policy allows this caller to use model "gpt-large" (service type "chat"); ask the gateway operator for a grant',
        type: "permission_error",
        code: "forbidden",
      },
    });
    expect((await rt.request("/v1/ocr", { headers: { "x-consumer": "ocr-bot" }, body: { model: "reader" } })).status).toBe(200);
    expect((await rt.request("/v1/ocr", { headers: { "x-consumer": "alice", "x-groups": "ml" }, body: { model: "reader" } })).status).toBe(403);
    expect((await rt.request("/jobs/ocr?model=reader", { headers: { "x-consumer": "ocr-bot" } })).status).toBe(200);
    expect((await rt.request("/jobs/ocr?model=reader", { headers: { "x-consumer": "bob" } })).status).toBe(403);
  });

  it("checks every method on a model's paths, not only POST", async () => {
    const rt = await start(base(rules));
    // Another method on the same path resolves the model too, and would reach its backend.
    expect((await rt.request("/v1/chat/completions", { method: "PUT", headers: { "x-groups": "sales" }, body: { model: "gpt-small" } })).status).toBe(403);
    expect((await rt.request("/v1/chat/completions", { method: "PUT", headers: { "x-groups": "ml" }, body: { model: "gpt-small" } })).status).toBe(200);
  });

  it("logs one security event per denial with the principal, model, service type and outcome", async () => {
    const rt = await start(base(rules));
    await chat(rt, "gpt-large", { "x-consumer": "bob", "x-user-type": "free", "x-groups": "sales" });
    await rt.request("/v1/ocr", { headers: { "x-consumer": "alice", "x-groups": "ml" }, body: { model: "reader" } });
    const events = rt.lines.filter((l) => l.event === "security_denied");
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      level: "warn",
      plugin: "policies",
      principal: { consumer: "bob", user_type: "free", groups: ["sales"], roles: [], scopes: [], authenticated: true },
      model: "gpt-large",
      service_type: "chat",
      method: "POST",
      path: "/v1/chat/completions",
      outcome: "no rule matches the caller",
      matched_rules: [],
    });
    expect(events[1]).toMatchObject({
      model: "reader",
      service_type: "ocr",
      outcome: 'rules [0] match the caller but none grants model "reader" of service type "ocr"',
      matched_rules: [0],
    });
  });

  it("counts every decision in svc_authz_decisions_total", async () => {
    const rt = await start(base(rules));
    await chat(rt, "gpt-small", { "x-groups": "ml" });
    await chat(rt, "gpt-small", { "x-groups": "ml" });
    await chat(rt, "gpt-small");
    const text = await rt.metrics.text();
    expect(metricValue(text, "svc_authz_decisions_total", { service_type: "chat", model: "gpt-small", decision: "allow" })).toBe(2);
    expect(metricValue(text, "svc_authz_decisions_total", { service_type: "chat", model: "gpt-small", decision: "deny" })).toBe(1);
  });

  it("denies everything with no rules, and allows everything with default: allow", async () => {
    const deny = await start(base("  rules: []\n"));
    expect((await chat(deny, "gpt-small", { "x-consumer": "alice" })).status).toBe(403);
    const allow = await start(base("  default: allow\n  rules:\n    - match: {groups: [nobody]}\n      allow_models: [nothing]\n"));
    expect((await chat(allow, "gpt-small")).status).toBe(200);
    expect((await allow.request("/jobs/ocr")).status).toBe(200);
    expect(allow.lines.some((l) => l.event === "security_denied")).toBe(false);
    expect(metricValue(await allow.metrics.text(), "svc_authz_decisions_total", { service_type: "chat", model: "gpt-small", decision: "allow" })).toBe(1);
  });
});

describe("per-group quotas", () => {
  const quotas = `  rules:
    - match: {groups: [trial]}
      allow_models: ['*']
      limits: {rate: 2, period: 1m, token_rate: 100, token_period: 1h}
    - match: {groups: [staff]}
      allow_models: ['*']
`;

  it("gives each member its own request rate on the LLM path, with Retry-After", async () => {
    const rt = await start(base(quotas));
    const alice = { "x-consumer": "alice", "x-groups": "trial" };
    expect((await chat(rt, "gpt-small", alice)).status).toBe(200);
    expect((await chat(rt, "gpt-large", alice)).status).toBe(200);
    const limited = await chat(rt, "gpt-small", alice);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("60");
    expect(((await limited.json()) as { error: { type: string; message: string } }).error).toEqual({
      type: "rate_limit_error",
      code: "rate_limit_exceeded",
      message: "group quota of policies.rules[0] exceeded: 2 requests per 1m; retry after the window resets",
    });
    // Another member has a budget of their own; a rule without limits gives none.
    expect((await chat(rt, "gpt-small", { "x-consumer": "bob", "x-groups": "trial" })).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await chat(rt, "gpt-small", { "x-consumer": "carol", "x-groups": "staff" })).status).toBe(200);
    // The window resets.
    rt.clock.advance(45_000);
    expect((await chat(rt, "gpt-small", alice)).headers.get("retry-after")).toBe("15");
    rt.clock.advance(15_001);
    expect((await chat(rt, "gpt-small", alice)).status).toBe(200);
  });

  it("skips anonymous callers and the non-LLM paths", async () => {
    const rt = await start(base(quotas));
    for (let i = 0; i < 4; i++) expect((await chat(rt, "gpt-small", { "x-groups": "trial" })).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      expect((await rt.request("/v1/ocr", { headers: { "x-consumer": "alice", "x-groups": "trial" }, body: { model: "reader" } })).status).toBe(200);
      expect((await rt.request("/jobs/chat?model=gpt-small", { headers: { "x-consumer": "alice", "x-groups": "trial" } })).status).toBe(200);
    }
  });

  it("counts each member's tokens from llm.usage and refuses requests once the budget is reached", async () => {
    const rt = await start(base(quotas.replace("rate: 2,", "rate: 0,")));
    const alice = { "x-consumer": "alice", "x-groups": "trial" };
    const spend = (prompt: number, completion: number, headers: Record<string, string> = alice) =>
      rt.request("/v1/chat/completions", { headers, body: { model: "gpt-small", usage: { prompt, completion } } });
    expect((await spend(40, 20)).status).toBe(200);
    expect(await rt.kv.get(tokenKey(0, "alice"))).toBe("60");
    // Cache-Control: no-cache responses are not counted (docs/design.md#token-budget).
    expect((await spend(500, 500, { ...alice, "cache-control": "no-cache" })).status).toBe(200);
    // The request that crosses the budget passes; the next one is refused.
    expect((await spend(30, 15)).status).toBe(200);
    expect(await rt.kv.get(tokenKey(0, "alice"))).toBe("105");
    const limited = await chat(rt, "gpt-small", alice);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("3600");
    expect(((await limited.json()) as { error: { message: string } }).error.message).toBe(
      "group token quota of policies.rules[0] exceeded: 100 tokens per 1h; retry after the window resets",
    );
    // Another member, and a member of a rule without limits, are not affected.
    expect((await chat(rt, "gpt-small", { "x-consumer": "bob", "x-groups": "trial" })).status).toBe(200);
    expect((await spend(500, 500, { "x-consumer": "carol", "x-groups": "staff" })).status).toBe(200);
    expect(await rt.kv.get(tokenKey(1, "carol"))).toBeNull();
    rt.clock.advance(3_600_001);
    expect((await chat(rt, "gpt-small", alice)).status).toBe(200);
  });

  it("adds tokens to the window with countTokens, ignoring zero usage", async () => {
    const rt = await start(base(quotas));
    const target = { ruleIndex: 0, limits: { rate: 0, periodMs: 60_000, tokenRate: 100, tokenPeriodMs: 3_600_000 } };
    await countTokens(rt.kv, rt.runtime.deps.log, target, "alice", 0);
    expect(await rt.kv.get(tokenKey(0, "alice"))).toBeNull();
    await countTokens(rt.kv, rt.runtime.deps.log, target, "alice", 7);
    expect(await rt.kv.get(tokenKey(0, "alice"))).toBe("7");
    expect(await rt.kv.pttl(tokenKey(0, "alice"))).toBe(3_600_000);
  });

  it("fails open when the store fails", async () => {
    const failing = (kv: KvStore): KvStore =>
      new Proxy(kv, {
        get(target, property, receiver) {
          if (property === "run" || property === "get" || property === "pttl") return () => Promise.reject(new Error("store down"));
          return Reflect.get(target, property, receiver);
        },
      });
    const rt = await start(base(quotas), { kv: failing });
    for (let i = 0; i < 4; i++) expect((await chat(rt, "gpt-small", { "x-consumer": "alice", "x-groups": "trial" })).status).toBe(200);
    // Logged once: the three identical repeats are only counted (repeated log lines are collapsed, core/log.ts).
    expect(rt.lines.filter((l) => l.event === "group_quota_store_error")).toHaveLength(1);
  });

  it("keys budgets by rule and consumer under quota:", async () => {
    const rt = await start(base(quotas));
    await chat(rt, "gpt-small", { "x-consumer": "alice", "x-groups": "trial" });
    expect(await rt.kv.run(windowIncrement, ["quota:req:0:alice"], [0, 60_000])).toEqual([1, 60_000]);
  });
});
