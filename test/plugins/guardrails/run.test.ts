/**
 * One request's rules in order (plugins/guardrails/run.ts): each rule reads what the rules
 * before it left, across a checking rule that answers later.
 */
import { Value } from "@sinclair/typebox/value";
import { describe, expect, it } from "vitest";
import type { GuardrailKind } from "../../../core/llm/guardrail-kinds.ts";
import type { JsonObject } from "../../../core/llm/json.ts";
import { silentLogger } from "../../../core/log.ts";
import type { RequestContext } from "../../../core/pipeline/context.ts";
import { type GuardrailRule, GuardrailRuleSchema } from "../../../plugins/guardrails/config.ts";
import { guardrailsHook } from "../../../plugins/guardrails/guard.ts";
import { GuardrailBlocked } from "../../../plugins/guardrails/refusal.ts";
import { compileRules } from "../../../plugins/guardrails/rules.ts";
import type { RuleSettings } from "../../support/guardrail-rules.ts";

/** A plugin's kind that answers later: "secret" becomes "[CHECKED]", and it records what it read. */
function laterKind(read: string[][]): GuardrailKind {
  return {
    name: "later",
    check: async (texts) => {
      read.push([...texts]);
      await new Promise((resolve) => setTimeout(resolve, 1));
      return texts.some((text) => text.includes("forbidden"))
        ? { action: "block", reason: "forbidden" }
        : { action: "mask", texts: texts.map((text) => text.replaceAll("secret", "[CHECKED]")) };
    },
  };
}

function inputHook(rules: RuleSettings[], kind?: GuardrailKind) {
  const compiled = compileRules(
    rules.map((rule) => Value.Default(GuardrailRuleSchema, structuredClone(rule)) as GuardrailRule),
    new Map(kind ? [[kind.name, kind]] : []),
    fetch,
  );
  const hook = guardrailsHook(compiled, { metrics: { action() {}, error() {} }, log: silentLogger, ids: { newId: () => "test" } });
  const ctx = { principal: { consumer: "team" }, request: new Request("http://test/") } as unknown as RequestContext;
  return hook.open({ ctx, model: "m", stream: false })!.input!;
}

const body = (content: string): JsonObject => ({ model: "m", messages: [{ role: "user", content }] });
const contentOf = (changed: JsonObject | undefined) => (changed?.messages as Array<{ content: string }>)[0].content;

describe("the input rules of one request", () => {
  it("each rule reads what the rules before it left, a checking rule that answers later included", async () => {
    const read: string[][] = [];
    const input = inputHook([
      { name: "codes", kind: "regex", on: ["input"], action: "mask", patterns: ["TICKET-[0-9]+"], mask_with: "[CODE] secret" },
      { name: "checker", kind: "later", on: ["input"], action: "mask" },
      { name: "after", kind: "regex", on: ["input"], action: "mask", patterns: ["\\[CHECKED\\]"], mask_with: "[AFTER]" },
    ], laterKind(read));
    const changed = await input(body("about TICKET-42 and a secret"));
    expect(read).toEqual([["about [CODE] secret and a secret"]]);
    expect(contentOf(changed)).toBe("about [CODE] [AFTER] and a [AFTER]");
  });

  it("a block after a checking rule that answered later refuses the request", async () => {
    const input = inputHook([
      { name: "checker", kind: "later", on: ["input"], action: "mask" },
      { name: "no-codes", kind: "regex", on: ["input"], action: "block", patterns: ["\\[CHECKED\\]"] },
    ], laterKind([]));
    await expect(input(body("a secret"))).rejects.toBeInstanceOf(GuardrailBlocked);
    await expect(input(body("forbidden"))).rejects.toMatchObject({ rule: "checker", message: expect.stringContaining("forbidden") });
  });

  it("matching rules alone: masked, unchanged or refused", async () => {
    const input = inputHook([
      { name: "pii", kind: "pii", on: ["input"], action: "mask", entities: ["email"] },
      { name: "no-codes", kind: "regex", on: ["input"], action: "block", patterns: ["TICKET-[0-9]+"] },
    ]);
    expect(contentOf(await input(body("write to ann@example.com")))).toBe("write to [EMAIL]");
    expect(await input(body("nothing to see"))).toBeUndefined();
    await expect(input(body("TICKET-7"))).rejects.toBeInstanceOf(GuardrailBlocked);
  });
});
