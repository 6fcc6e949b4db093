/**
 * The policy decision (docs/design.md#access-policies), compiled once per runtime:
 * 1. a rule matches the caller when every non-empty `match` field is satisfied (AND);
 *    groups, roles and scopes by membership of at least one listed value, consumers and
 *    user types exactly; an empty `match` matches everyone;
 * 2. it grants the request when the model alias matches one `allow_models` glob and, when
 *    `allow_service_types` is set, the service type matches one of those;
 * 3. the request is allowed when some rule both matches and grants.
 */
import { durationMs } from "../../core/config/duration.ts";
import type { GatewayConfig } from "../../core/config/schema.ts";
import type { Principal } from "../../core/pipeline/context.ts";
import { anyGlob, type Glob, GlobError } from "../../core/glob.ts";

export type PoliciesConfig = NonNullable<GatewayConfig["policies"]>;
type RuleConfig = PoliciesConfig["rules"][number];

/** A rule's per-member quota (docs/design.md#per-group-quotas); 0 = that budget is off. */
export interface RuleLimits {
  rate: number;
  periodMs: number;
  tokenRate: number;
  tokenPeriodMs: number;
}

export interface CompiledRule {
  /** Position in `policies.rules`, for logs and quota keys. */
  index: number;
  matches(principal: Principal): boolean;
  grants(model: string, serviceType: string): boolean;
  /** Present when the rule sets a non-zero request rate or token budget. */
  limits?: RuleLimits;
}

export type Decision =
  | { allowed: true; rule: CompiledRule }
  | { allowed: false; matched: number[]; reason: string };

type Matcher = (principal: Principal) => boolean;

/** Membership of at least one listed value; an empty list is no condition. */
function anyOf(listed: readonly string[], held: (p: Principal) => readonly string[]): Matcher | undefined {
  if (listed.length === 0) return undefined;
  const wanted = new Set(listed);
  return (principal) => held(principal).some((value) => wanted.has(value));
}

/** Exact match of a single value; an absent value never matches a non-empty list. */
function oneOf(listed: readonly string[], held: (p: Principal) => string | undefined): Matcher | undefined {
  if (listed.length === 0) return undefined;
  const wanted = new Set(listed);
  return (principal) => {
    const value = held(principal);
    return value !== undefined && wanted.has(value);
  };
}

function compileLimits(limits: RuleConfig["limits"]): RuleLimits | undefined {
  if (!limits || (limits.rate === 0 && limits.token_rate === 0)) return undefined;
  return {
    rate: limits.rate,
    periodMs: durationMs(limits.period),
    tokenRate: limits.token_rate,
    tokenPeriodMs: durationMs(limits.token_period),
  };
}

export function compileRule(rule: RuleConfig, index: number): CompiledRule {
  const matchers = [
    anyOf(rule.match.groups, (p) => p.groups),
    anyOf(rule.match.roles, (p) => p.roles),
    anyOf(rule.match.scopes, (p) => p.scopes),
    oneOf(rule.match.consumers, (p) => p.consumer),
    oneOf(rule.match.user_types, (p) => p.userType),
  ].filter((m): m is Matcher => m !== undefined);
  // A glob the regex engine refuses names its config path (a start refusal).
  const globs = (field: "allow_models" | "allow_service_types"): Glob => {
    try {
      return anyGlob(rule[field]);
    } catch (error) {
      if (error instanceof GlobError) throw new GlobError(`policies.rules[${index}].${field}: ${error.message}`);
      throw error;
    }
  };
  const models = globs("allow_models");
  const types = rule.allow_service_types.length > 0 ? globs("allow_service_types") : undefined;
  return {
    index,
    matches: (principal) => matchers.every((m) => m(principal)),
    grants: (model, serviceType) => models(model) && (types === undefined || types(serviceType)),
    limits: compileLimits(rule.limits),
  };
}

/** Problems a schema cannot see, each with its config path (reported as a start refusal). */
export function ruleProblems(policies: PoliciesConfig): string[] {
  const problems: string[] = [];
  policies.rules.forEach((rule, index) => {
    const at = `policies.rules[${index}].limits`;
    if (rule.limits && rule.limits.rate > 0 && durationMs(rule.limits.period) === 0) problems.push(`${at}.period: must be positive when rate is set`);
    if (rule.limits && rule.limits.token_rate > 0 && durationMs(rule.limits.token_period) === 0) {
      problems.push(`${at}.token_period: must be positive when token_rate is set`);
    }
  });
  return problems;
}

export class PolicySet {
  readonly rules: readonly CompiledRule[];

  constructor(policies: PoliciesConfig) {
    this.rules = policies.rules.map(compileRule);
  }

  /** The first rule that both matches and grants allows the request; its limits are the ones that apply. */
  decide(principal: Principal, model: string, serviceType: string): Decision {
    const matched: number[] = [];
    for (const rule of this.rules) {
      if (!rule.matches(principal)) continue;
      if (rule.grants(model, serviceType)) return { allowed: true, rule };
      matched.push(rule.index);
    }
    const reason = matched.length === 0
      ? "no rule matches the caller"
      : `rules ${matched.map((i) => `[${i}]`).join(", ")} match the caller but none grants model "${model}" of service type "${serviceType}"`;
    return { allowed: false, matched, reason };
  }
}
