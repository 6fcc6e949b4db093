/**
 * The policy stage (docs/design.md#access-policies): after the model is resolved and before any
 * limit or backend work, a request is allowed only when some rule both matches the caller and
 * grants the model; otherwise 403. Every decision is counted, every denial logged as a
 * security event (one JSON line).
 */
import { errors } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { Metrics } from "../../core/metrics.ts";
import type { Principal } from "../../core/pipeline/context.ts";
import type { StageStep } from "../../core/pipeline/pipeline.ts";
import type { PoliciesConfig, PolicySet } from "./rules.ts";
// The `policyQuota` request variable is declared there.
import type {} from "./quotas.ts";

function describePrincipal(principal: Principal) {
  return {
    consumer: principal.consumer ?? null,
    user_type: principal.userType ?? null,
    groups: principal.groups,
    roles: principal.roles,
    scopes: principal.scopes,
    authenticated: principal.authenticated,
  };
}

export function policyStep(mode: PoliciesConfig["default"], policies: PolicySet, metrics: Metrics, log: Logger): StageStep {
  const decisions = metrics.counter({
    name: "svc_authz_decisions_total",
    help: "Access policy decisions, by service type, model and decision (allow or deny)",
    labelNames: ["service_type", "model", "decision"],
  });
  return function enforcePolicies(ctx) {
    const service = ctx.service;
    // Nothing resolved (job status, usage): nothing to authorize against. The baseline
    // (docs/design.md#access-policies) names the POST routes, but the sync proxy serves any method
    // on a configured path, and a GET there reaches the backend just the same, so every method is
    // checked.
    if (!service) return;
    const labels = { service_type: service.type, model: service.model };
    // `default: allow` turns enforcement off, group quotas included.
    if (mode === "allow") {
      decisions.inc({ ...labels, decision: "allow" });
      return;
    }
    const decision = policies.decide(ctx.principal, service.model, service.type);
    if (decision.allowed) {
      decisions.inc({ ...labels, decision: "allow" });
      if (decision.rule.limits) ctx.vars.policyQuota = { ruleIndex: decision.rule.index, limits: decision.rule.limits };
      return;
    }
    decisions.inc({ ...labels, decision: "deny" });
    log.warn("security_denied", {
      principal: describePrincipal(ctx.principal),
      model: service.model,
      service_type: service.type,
      method: ctx.request.method,
      path: ctx.url.pathname,
      outcome: decision.reason,
      matched_rules: decision.matched,
    });
    throw errors.forbidden(
      `access denied: no access policy allows this caller to use model "${service.model}" (service type "${service.type}"); ask the gateway operator for a grant`,
    );
  };
}
