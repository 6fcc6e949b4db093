/**
 * The guardrails as an LLM proxy hook (core/llm/hooks.ts): per request, the rules that apply to
 * its model, consumer and user type, on its input before the cache lookup, and on its answer
 * (whole, or as it streams).
 */
import type { LlmHook, LlmRequestHook } from "../../core/llm/hooks.ts";
import type { IdSource } from "../../core/clock.ts";
import type { CompiledRule } from "./rules.ts";
import { RequestRun, type RunDeps } from "./run.ts";
import { GuardedStream } from "./stream-filter.ts";
import { answerTexts, requestTexts } from "./texts.ts";

export function guardrailsHook(rules: readonly CompiledRule[], deps: RunDeps & { ids: IdSource }): LlmHook {
  const inputRules = rules.filter((rule) => rule.stages.has("input"));
  return {
    readsInputOf: (model) => inputRules.some((rule) => rule.appliesToModel(model)),
    open({ ctx, model, stream }): LlmRequestHook | undefined {
      const consumer = ctx.principal.consumer ?? "";
      const userType = ctx.principal.userType ?? "";
      const input: CompiledRule[] = [];
      const output: CompiledRule[] = [];
      for (const rule of rules) {
        if (!rule.applies(model, consumer, userType)) continue;
        if (rule.stages.has("input")) input.push(rule);
        if (rule.stages.has("output")) output.push(rule);
      }
      if (input.length === 0 && output.length === 0) return undefined;
      const run = new RequestRun(deps, () => ctx.request.headers.get("x-request-id") ?? deps.ids.newId(), model, consumer, ctx);
      const hook: LlmRequestHook = { spanAttributes: () => run.spanAttributes() };
      if (input.length > 0) {
        hook.input = async (body) => {
          const texts = requestTexts(body);
          const next = await run.checkTexts(input, "input", texts.texts);
          return next ? texts.write(next.texts, next.masksOnly) : undefined;
        };
      }
      if (output.length > 0 && stream) {
        const matchers = output.filter((rule) => rule.matcher);
        const checkers = output.filter((rule) => rule.checker);
        hook.stream = () => new GuardedStream(run, matchers, checkers);
      } else if (output.length > 0) {
        hook.answer = async (body) => {
          const texts = answerTexts(body);
          const next = await run.checkTexts(output, "output", texts.texts);
          // No note for the writer of request bodies: an answer is written by JSON.stringify.
          return next ? texts.write(next.texts) : undefined;
        };
      }
      return hook;
    },
  };
}
