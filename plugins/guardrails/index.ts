/**
 * Guardrails (docs/guardrails.md): rules on what models read and write, in the `guardrails`
 * list. Built-in kinds `regex`, `pii` and `http`; plugins add their own through the
 * `guardrailKinds` service. The rules run as a hook of the LLM proxy (`llmHooks`), on the
 * chat-completions form every client protocol is turned into, so every LLM entry (chat
 * completions, `/v1/messages`, batch lines dispatched through the proxy) gets them. Always on
 * (a plugin kind's plugin depends on it); the rules are compiled once every plugin is set up,
 * when every kind is registered, and a kind nobody registered refuses the start or the reload.
 */
import type { GuardrailKind, GuardrailKinds } from "../../core/llm/guardrail-kinds.ts";
import { PluginError } from "../../core/plugins/host.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { BUILTIN_KINDS, guardrailsSection } from "./config.ts";
import { guardrailsHook } from "./guard.ts";
import { guardrailMetrics } from "./metrics.ts";
import { compileRules } from "./rules.ts";

export default definePlugin({
  name: "guardrails",
  optionalDependsOn: ["llm-proxy"],
  section: guardrailsSection,
  setup(api) {
    const kinds = new Map<string, GuardrailKind>();
    const registry: GuardrailKinds = {
      register(kind) {
        if ((BUILTIN_KINDS as readonly string[]).includes(kind.name)) throw new PluginError(`guardrail kind "${kind.name}" is built in; choose another name`);
        if (kinds.has(kind.name)) throw new PluginError(`guardrail kind "${kind.name}" is already registered`);
        kinds.set(kind.name, kind);
      },
    };
    api.provide("guardrailKinds", registry);
    const rules = api.section;
    if (rules.length === 0) return;
    api.onReady(() => {
      const known = [...BUILTIN_KINDS, ...kinds.keys()];
      const problems = rules.flatMap((rule, index) =>
        known.includes(rule.kind)
          ? []
          : [`guardrails[${index}].kind: unknown kind "${rule.kind}"; known kinds: ${known.join(", ")} (a plugin's kind needs its plugin in plugins.load)`]
      );
      if (problems.length > 0) throw new PluginError(problems.join("; "), problems);
      if (!api.has("llmHooks")) return;
      const compiled = compileRules(rules, kinds, api.fetch);
      api.use("llmHooks").register(guardrailsHook(compiled, { metrics: guardrailMetrics(api.metrics), log: api.log, ids: api.ids }));
    });
  },
});
