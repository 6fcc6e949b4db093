/**
 * The guardrails of one request: the rules that apply to it run on its texts in the order
 * listed, and what they did is counted (once per rule, stage and action), logged (a block, a
 * `log` match, a failed check: the rule and the request id, never the matched text) and put on
 * the request's span (`gateway.guardrail`). A refusal marks the request's `outcome`
 * (`guardrail_blocked`), which its usage record counts (docs/guardrails.md#visibility).
 */
import type { Logger } from "../../core/log.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { CheckResult } from "./checkers.ts";
import { keepsPairs, masked } from "./matchers.ts";
import type { GuardrailMetrics } from "./metrics.ts";
import { GuardrailBlocked } from "./refusal.ts";
import type { Action, CompiledRule, Stage } from "./rules.ts";

/** Texts the rules changed. */
export interface ChangedTexts {
  texts: string[];
  /**
   * Each changed text is its original with spans replaced by masks that need no escape in JSON,
   * no surrogate pair cut: what lets the body be written without reading the texts again
   * (core/llm/json-text.ts). False once a checker's texts or another mask took part.
   */
  masksOnly: boolean;
}

export interface RunDeps {
  metrics: GuardrailMetrics;
  log: Logger;
}

const what = (stage: Stage) => (stage === "input" ? "request" : "answer");

export class RequestRun {
  /** What was counted, as `rule:stage:action` (a few at most: an array is cheaper to make than a Set). */
  private readonly done: string[] = [];
  private id: string | undefined;

  constructor(
    private readonly deps: RunDeps,
    /** The request's id, asked for once a line is logged (most requests log none). */
    private readonly idOf: () => string,
    readonly model: string,
    readonly consumer: string,
    /** The request whose `outcome` a refusal marks. */
    private readonly request: Pick<RequestContext, "outcome">,
  ) {}

  private requestId(): string {
    this.id ??= this.idOf();
    return this.id;
  }

  /** Counts and logs what `rule` did (once per stage and action). */
  acted(rule: CompiledRule, stage: Stage, action: Action, detail?: string): void {
    const key = rule.actionKeys[stage][action];
    if (this.done.includes(key)) return;
    this.done.push(key);
    this.deps.metrics.action(rule.name, stage, action);
    if (action === "mask") return;
    const fields = { guardrail: rule.name, kind: rule.kind, stage, request_id: this.requestId(), model: this.model, ...(detail ? { detail } : {}) };
    if (action === "block") this.deps.log.warn("guardrail_blocked", fields);
    else this.deps.log.info("guardrail_matched", fields);
  }

  /** The refusal of `rule` (counted and logged). */
  blocked(rule: CompiledRule, stage: Stage, reason?: string): GuardrailBlocked {
    this.acted(rule, stage, "block");
    const why = reason ? `: ${reason}` : rule.matcher ? `: it contains text the rule blocks (kind ${rule.kind})` : "";
    return this.refusal(rule, `guardrail "${rule.name}" refused the ${what(stage)}${why}`);
  }

  /** A check that failed: counted and logged; `closed` refuses (the refusal returned), `open` lets the texts pass. */
  failed(rule: CompiledRule, stage: Stage, why: string): GuardrailBlocked | undefined {
    this.deps.metrics.error(rule.name);
    this.deps.log.warn("guardrail_check_failed", { guardrail: rule.name, kind: rule.kind, stage, request_id: this.requestId(), failure: rule.failure, why });
    if (rule.failure === "open") return undefined;
    this.acted(rule, stage, "block", "check failed");
    return this.refusal(rule, `guardrail "${rule.name}" could not check the ${what(stage)} (${why}); its failure setting is "closed", which refuses it`);
  }

  /**
   * The refusal of `rule`, marked on the request: whether it ends as a 400 or, in a stream
   * whose 200 went out, as an error event, the request counts as refused, not served.
   */
  private refusal(rule: CompiledRule, message: string): GuardrailBlocked {
    const refusal = new GuardrailBlocked(rule.name, message);
    this.request.outcome = refusal.type;
    return refusal;
  }

  /** What a checking rule says of `texts`. */
  check(rule: CompiledRule, stage: Stage, texts: readonly string[]): Promise<CheckResult> {
    return rule.checker!(texts, { stage, model: this.model, consumer: this.consumer, rule: rule.name, settings: rule.settings });
  }

  /** `texts` through `rules` in order: the masked texts, undefined when nothing changed; throws the refusal of a blocking rule. */
  async checkTexts(rules: readonly CompiledRule[], stage: Stage, texts: readonly string[]): Promise<ChangedTexts | undefined> {
    let current = texts;
    let changed = false;
    let masksOnly = true;
    for (const rule of rules) {
      if (rule.matcher) {
        const found = current.map((text) => rule.matcher!.find(text));
        if (found.every((matches) => matches.length === 0)) continue;
        if (rule.action === "block") throw this.blocked(rule, stage);
        this.acted(rule, stage, rule.action);
        if (rule.action === "mask") {
          if (!rule.matcher.plainMasks || !current.every((text, i) => keepsPairs(text, found[i]))) masksOnly = false;
          current = current.map((text, i) => masked(text, found[i]));
          changed = true;
        }
        continue;
      }
      const verdict = await this.check(rule, stage, current);
      if (verdict.action === "failed") {
        const refusal = this.failed(rule, stage, verdict.why);
        if (refusal) throw refusal;
        continue;
      }
      if (verdict.action === "allow") continue;
      if (rule.action === "log") {
        this.acted(rule, stage, "log", `the checker said ${verdict.action}`);
        continue;
      }
      if (verdict.action === "block") throw this.blocked(rule, stage, verdict.reason);
      this.acted(rule, stage, "mask");
      current = verdict.texts;
      changed = true;
      masksOnly = false;
    }
    return changed ? { texts: [...current], masksOnly } : undefined;
  }

  /** The span's `gateway.guardrail`: what each rule did, as `rule:stage:action`. */
  spanAttributes(): Record<string, string[]> {
    return this.done.length === 0 ? {} : { "gateway.guardrail": [...this.done] };
  }
}
