/**
 * A guardrail kind of your own: "shouting" refuses texts written mostly in capitals (a rule's
 * `settings.max_ratio`, default 0.8, of their letters). Load it and use it in a rule:
 *
 *   plugins:
 *     load: [./examples/guardrail-kind.ts]
 *   guardrails:
 *     - { name: no-shouting, kind: shouting, on: [input], action: block, settings: { max_ratio: 0.6 } }
 *
 * A kind is a function from the texts to a verdict (allow, block with a reason, or mask with
 * the texts replaced, in the same order), sync or async; docs/guardrails.md has the contract.
 */
import { definePlugin, type GuardrailKind, type GuardrailVerdict } from "inference-gateway/plugin";

function capitalsRatio(text: string): number {
  const letters = text.replace(/[^A-Za-z]/g, "");
  if (letters.length < 8) return 0;
  return letters.replace(/[^A-Z]/g, "").length / letters.length;
}

const shouting: GuardrailKind = {
  name: "shouting",
  check(texts, context): GuardrailVerdict {
    const limit = typeof context.settings.max_ratio === "number" ? context.settings.max_ratio : 0.8;
    const loud = texts.some((text) => capitalsRatio(text) > limit);
    return loud ? { action: "block", reason: "please do not shout" } : { action: "allow" };
  },
};

export default definePlugin({
  name: "guardrail-shouting",
  dependsOn: ["guardrails"], // provides guardrailKinds
  setup(api) {
    api.use("guardrailKinds").register(shouting);
  },
});
