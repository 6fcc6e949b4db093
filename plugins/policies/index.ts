/**
 * Access policies (docs/design.md#access-policies), on when the config has a `policies` block.
 * Needs the auth plugin: without a verified principal, groups, roles and scopes would be whatever
 * the client sent (the config loader already refuses `policies` with `auth.mode: none`; the
 * dependency also refuses `plugins: { auth: false }`).
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { policiesSection } from "./config.ts";
import { PluginError } from "../../core/plugins/host.ts";
import { policyStep } from "./decide-step.ts";
import { countTokens, quotaStep } from "./quotas.ts";
import { TokenAttribution } from "./token-attribution.ts";
import { PolicySet, ruleProblems } from "./rules.ts";
import { GlobError } from "../../core/glob.ts";

export default definePlugin({
  name: "policies",
  section: policiesSection,
  dependsOn: ["auth"],
  enabled: (config) => config.policies !== undefined,
  setup(api) {
    const policies = api.config.policies;
    if (!policies) return;
    const problems = ruleProblems(policies);
    if (problems.length > 0) throw new PluginError(problems.join("; "), problems); // each names its policies.rules[] key
    let compiled: PolicySet;
    try {
      compiled = new PolicySet(policies);
    } catch (error) {
      if (error instanceof GlobError) throw new PluginError(error.message);
      throw error;
    }
    policies.rules.forEach((rule, index) => {
      if (rule.allow_models.length === 0) {
        api.log.warn("policy_rule_grants_nothing", { rule: index, message: `policies.rules[${index}].allow_models is empty, so the rule allows no model` });
      }
    });
    api.stage("policy", policyStep(policies.default, compiled, api.metrics, api.log));
    // A denied model stays a 403 when named, but no 404's list of models offers it.
    if (policies.default !== "allow") api.modelAccess.deny((ctx, service) => compiled.decide(ctx.principal, service.model, service.type).allowed);
    const attribution = new TokenAttribution();
    api.stage("limits", quotaStep(api.kv, api.log, attribution));
    // docs/design.md#token-budget: streamed, uncounted (no-cache) and usage-less responses spend no
    // budget.
    api.on("llm.usage", (event) => {
      if (!event.counted || event.consumer === "") return;
      const target = attribution.targetOf(event);
      if (target) void countTokens(api.kv, api.log, target, event.consumer, event.prompt + event.completion);
    });
  },
});
