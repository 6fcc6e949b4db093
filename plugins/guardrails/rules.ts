/**
 * The `guardrails` list compiled once per runtime (a reload compiles the new list): each rule's
 * matcher (`regex`, `pii`) or checker (`http`, a plugin's kind), and who it applies to.
 */
import { durationMs } from "../../core/config/duration.ts";
import { anyGlob, type Glob } from "../../core/glob.ts";
import type { GuardrailKind } from "../../core/llm/guardrail-kinds.ts";
import { type Checker, httpChecker, pluginChecker } from "./checkers.ts";
import type { GuardrailRule } from "./config.ts";
import { piiMatcher, regexMatcher, type TextMatcher } from "./matchers.ts";

export type Stage = "input" | "output";
export type Action = "block" | "mask" | "log";

const STAGES: readonly Stage[] = ["input", "output"];
const ACTIONS: readonly Action[] = ["block", "mask", "log"];

export interface CompiledRule {
  readonly name: string;
  readonly kind: string;
  readonly action: Action;
  readonly stages: ReadonlySet<Stage>;
  /** `name:stage:action` for each stage and action, made once: what a request's span lists (run.ts). */
  readonly actionKeys: Readonly<Record<Stage, Readonly<Record<Action, string>>>>;
  /** `regex`, `pii`: found in the text itself. */
  readonly matcher?: TextMatcher;
  /** `http`, a plugin's kind: asked for a verdict. */
  readonly checker?: Checker;
  readonly failure: "open" | "closed";
  readonly settings: Readonly<Record<string, unknown>>;
  readonly streamWindow: number;
  readonly streamCheckEvery: number;
  applies(model: string, consumer: string, userType: string): boolean;
  /** Whether the rule's `models` take `model` (its consumers and user types aside). */
  appliesToModel(model: string): boolean;
}

const DEFAULT_MASK = "[REDACTED]";
const DEFAULT_TIMEOUT = "2s";

/** The rules; `kinds` are the plugin kinds registered (every rule's kind is one of them or built in: checked before). */
export function compileRules(rules: readonly GuardrailRule[], kinds: ReadonlyMap<string, GuardrailKind>, fetcher: typeof fetch): CompiledRule[] {
  return rules.map((rule) => {
    const models: Glob = anyGlob(rule.models);
    const consumers: Glob = anyGlob(rule.consumers);
    const userTypes: Glob = anyGlob(rule.user_types);
    const base = {
      name: rule.name,
      kind: rule.kind,
      action: rule.action,
      stages: new Set(rule.on),
      actionKeys: Object.fromEntries(
        STAGES.map((stage) => [stage, Object.fromEntries(ACTIONS.map((action) => [action, `${rule.name}:${stage}:${action}`]))]),
      ) as CompiledRule["actionKeys"],
      failure: rule.failure ?? "closed",
      settings: rule.settings ?? {},
      streamWindow: rule.stream_window,
      streamCheckEvery: rule.stream_check_every,
      applies: (model: string, consumer: string, userType: string) => models(model) && consumers(consumer) && userTypes(userType),
      appliesToModel: models,
    };
    if (rule.kind === "regex") return { ...base, matcher: regexMatcher(rule.patterns ?? [], rule.mask_with ?? DEFAULT_MASK) };
    if (rule.kind === "pii") {
      const matcher = piiMatcher(rule.entities ?? []);
      // A match spans at most `maxLength` characters: holding back one fewer keeps any split value whole.
      return { ...base, matcher, streamWindow: Math.min(rule.stream_window, Math.max(0, (matcher.maxLength ?? Infinity) - 1)) };
    }
    if (rule.kind === "http") {
      const settings = { url: rule.url ?? "", timeoutMs: durationMs(rule.timeout ?? DEFAULT_TIMEOUT), headers: rule.headers ?? {} };
      return { ...base, checker: httpChecker(fetcher, settings) };
    }
    const kind = kinds.get(rule.kind);
    if (!kind) throw new Error(`guardrail kind "${rule.kind}" is not registered`);
    return { ...base, checker: pluginChecker(kind) };
  });
}
