/** The guardrails' metrics: what the rules did, and the checks that failed. */
import { type CounterChild, counterChildren } from "../../core/metric-labels.ts";
import type { Metrics } from "../../core/metrics.ts";
import type { Action, Stage } from "./rules.ts";

export interface GuardrailMetrics {
  action(guardrail: string, stage: Stage, action: Action): void;
  error(guardrail: string): void;
}

export function guardrailMetrics(metrics: Metrics): GuardrailMetrics {
  const actions = metrics.counter({
    name: "svc_guardrail_actions_total",
    help: "What guardrail rules did, by rule, stage (input, output) and action (block, mask, log); once per request and rule",
    labelNames: ["guardrail", "stage", "action"],
  });
  const errors = metrics.counter({
    name: "svc_guardrail_errors_total",
    help: "Guardrail checks that failed (an http checker that did not answer in time or answered badly, a plugin kind that threw), by rule",
    labelNames: ["guardrail"],
  });
  // Counted on every request a rule acts on: its series prepared (core/metric-labels.ts), and
  // found by rule, stage and action rather than by a key made of them on every request.
  const actionSeries = counterChildren(actions);
  const byRule = new Map<string, Record<Stage, Partial<Record<Action, CounterChild>>>>();
  return {
    action: (guardrail, stage, action) => {
      let series = byRule.get(guardrail);
      if (!series) byRule.set(guardrail, series = { input: {}, output: {} });
      (series[stage][action] ??= actionSeries({ guardrail, stage, action })).inc();
    },
    error: (guardrail) => errors.inc({ guardrail }),
  };
}
