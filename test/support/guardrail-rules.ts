/** Guardrail rules compiled as the plugin compiles them from config, the schema's defaults filled in (every model, consumer and user type). */
import { Value } from "@sinclair/typebox/value";
import { type GuardrailRule, GuardrailRuleSchema } from "../../plugins/guardrails/config.ts";
import { type CompiledRule, compileRules } from "../../plugins/guardrails/rules.ts";

export type RuleSettings = Pick<GuardrailRule, "name" | "kind" | "on" | "action"> & Partial<GuardrailRule>;

export function compiledRules(rules: readonly RuleSettings[]): CompiledRule[] {
  return compileRules(rules.map((rule) => Value.Default(GuardrailRuleSchema, structuredClone(rule)) as GuardrailRule), new Map(), fetch);
}
