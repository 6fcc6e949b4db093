import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../plugins/config.ts";
import type { Principal } from "../../../core/pipeline/context.ts";
import { type PoliciesConfig, PolicySet, ruleProblems } from "../../../plugins/policies/rules.ts";

function policies(yaml: string): PoliciesConfig {
  const { config } = loadConfig(`auth:\n  mode: proxy\npolicies:\n${yaml}`, {});
  if (!config.policies) throw new Error("no policies in the test config");
  return config.policies;
}

const who = (fields: Partial<Principal> = {}): Principal => ({ groups: [], roles: [], scopes: [], authenticated: true, ...fields });

describe("policy rules (docs/design.md#access-policies)", () => {
  it("an empty match matches everyone, anonymous callers included", () => {
    const set = new PolicySet(policies("  rules:\n    - match: {}\n      allow_models: ['*']\n"));
    expect(set.decide(who({ authenticated: false }), "m", "chat").allowed).toBe(true);
    expect(set.decide(who({ consumer: "x" }), "m", "chat").allowed).toBe(true);
  });

  it("a rule without match also matches everyone", () => {
    const set = new PolicySet(policies("  rules:\n    - allow_models: ['*']\n"));
    expect(set.decide(who(), "m", "chat").allowed).toBe(true);
  });

  it("groups, roles and scopes match by membership of at least one listed value", () => {
    for (const field of ["groups", "roles", "scopes"] as const) {
      const set = new PolicySet(policies(`  rules:\n    - match: {${field}: [a, b]}\n      allow_models: ['*']\n`));
      expect(set.decide(who({ [field]: ["b"] }), "m", "t").allowed, field).toBe(true);
      expect(set.decide(who({ [field]: ["z", "a"] }), "m", "t").allowed, field).toBe(true);
      expect(set.decide(who({ [field]: ["z"] }), "m", "t").allowed, field).toBe(false);
      expect(set.decide(who(), "m", "t").allowed, field).toBe(false);
    }
  });

  it("consumers and user types match exactly, and an absent value never matches", () => {
    const consumers = new PolicySet(policies("  rules:\n    - match: {consumers: [alice]}\n      allow_models: ['*']\n"));
    expect(consumers.decide(who({ consumer: "alice" }), "m", "t").allowed).toBe(true);
    expect(consumers.decide(who({ consumer: "Alice" }), "m", "t").allowed).toBe(false);
    expect(consumers.decide(who({ consumer: "alice2" }), "m", "t").allowed).toBe(false);
    expect(consumers.decide(who(), "m", "t").allowed).toBe(false);
    const userTypes = new PolicySet(policies("  rules:\n    - match: {user_types: [premium]}\n      allow_models: ['*']\n"));
    expect(userTypes.decide(who({ userType: "premium" }), "m", "t").allowed).toBe(true);
    expect(userTypes.decide(who({ userType: "free" }), "m", "t").allowed).toBe(false);
    expect(userTypes.decide(who(), "m", "t").allowed).toBe(false);
  });

  it("every non-empty match field must hold (AND)", () => {
    const set = new PolicySet(policies("  rules:\n    - match: {groups: [ml], roles: [admin], user_types: [staff]}\n      allow_models: ['*']\n"));
    expect(set.decide(who({ groups: ["ml"], roles: ["admin"], userType: "staff" }), "m", "t").allowed).toBe(true);
    expect(set.decide(who({ groups: ["ml"], roles: ["admin"] }), "m", "t").allowed).toBe(false);
    expect(set.decide(who({ groups: ["ml"], userType: "staff" }), "m", "t").allowed).toBe(false);
    expect(set.decide(who({ roles: ["admin"], userType: "staff" }), "m", "t").allowed).toBe(false);
  });

  it("an empty allow_models grants nothing, even with an empty match", () => {
    const set = new PolicySet(policies("  rules:\n    - match: {}\n      allow_models: []\n"));
    const decision = set.decide(who(), "m", "t");
    expect(decision).toEqual({ allowed: false, matched: [0], reason: 'rules [0] match the caller but none grants model "m" of service type "t"' });
  });

  it("allow_service_types, when set, must match too", () => {
    const set = new PolicySet(policies("  rules:\n    - allow_models: ['*']\n      allow_service_types: ['chat*', ocr]\n"));
    expect(set.decide(who(), "m", "chat").allowed).toBe(true);
    expect(set.decide(who(), "m", "chat-large").allowed).toBe(true);
    expect(set.decide(who(), "m", "ocr").allowed).toBe(true);
    expect(set.decide(who(), "m", "asr").allowed).toBe(false);
  });

  it("allows when any rule both matches and grants; the first such rule is the one that applies", () => {
    const set = new PolicySet(
      policies(`  rules:
    - match: {groups: [ml]}
      allow_models: [small-*]
    - match: {groups: [research]}
      allow_models: ['*']
      limits: {rate: 5, period: 1m}
    - match: {groups: [ml]}
      allow_models: [large-?]
      limits: {token_rate: 100, token_period: 1h}
`),
    );
    const ml = who({ groups: ["ml"] });
    expect(set.decide(ml, "small-1", "chat")).toMatchObject({ allowed: true, rule: { index: 0 } });
    const large = set.decide(ml, "large-1", "chat");
    expect(large).toMatchObject({ allowed: true, rule: { index: 2, limits: { rate: 0, tokenRate: 100, tokenPeriodMs: 3_600_000 } } });
    expect(set.decide(ml, "huge", "chat")).toEqual({
      allowed: false,
      matched: [0, 2],
      reason: 'rules [0], [2] match the caller but none grants model "huge" of service type "chat"',
    });
    expect(set.decide(who({ groups: ["other"] }), "small-1", "chat")).toEqual({ allowed: false, matched: [], reason: "no rule matches the caller" });
    expect(set.decide(who({ groups: ["research"] }), "huge", "chat")).toMatchObject({
      allowed: true,
      rule: { index: 1, limits: { rate: 5, periodMs: 60_000 } },
    });
  });

  it("a rule with only zero limits carries none", () => {
    const set = new PolicySet(policies("  rules:\n    - allow_models: ['*']\n      limits: {rate: 0}\n"));
    expect(set.rules[0].limits).toBeUndefined();
  });

  it("names the path of a quota without a window", () => {
    expect(ruleProblems(policies("  rules:\n    - allow_models: ['*']\n      limits: {rate: 3, period: 0s, token_rate: 9, token_period: '0'}\n"))).toEqual([
      "policies.rules[0].limits.period: must be positive when rate is set",
      "policies.rules[0].limits.token_period: must be positive when token_rate is set",
    ]);
    expect(ruleProblems(policies("  rules:\n    - allow_models: ['*']\n      limits: {rate: 3}\n"))).toEqual([]);
  });

  it("names the rule and field of a glob that cannot compile", () => {
    expect(() => new PolicySet(policies("  rules:\n    - allow_models: ['*']\n    - allow_models: [ok]\n      allow_service_types: ['[z-a]']\n"))).toThrow(
      'policies.rules[1].allow_service_types: invalid glob "[z-a]"',
    );
  });
});
