/**
 * What measures a consumer on one model (service type and model) with one user type: the
 * `rate_limits` entry, the token and cost budgets, and the keys and arguments of the
 * admission check. Every limited request needs them and they only change with the config,
 * so they are built the first time a (type, model, user type, consumer) is seen and kept for
 * the runtime (a reload builds a new runtime, and so a new cache): a request builds no key.
 * A model without budgets of its own (`token_limits`) measures a consumer as every such model
 * of its type does, so those share one entry per consumer: with a thousand models, a consumer
 * that calls many of them takes one entry, not one per model. Past MAX_ENTRIES the cache keeps
 * what it holds and other consumers' measures are built per request
 * (docs/design.md#bounded-caches).
 */
import type { CostBudget } from "../../core/limits/cost-budget.ts";
import { costBudgets } from "./cost.ts";
import { type BudgetWindow, budgetWindow } from "./hold.ts";
import { limitKeys } from "./keys.ts";
import type { LimitTable, TypeLimits } from "./table.ts";
import { type Budget, tokenBudgets } from "./tokens.ts";

/** Shared by every request of the same consumer: never changed once built. */
export interface Measures {
  /** The `rate_limits` entry measuring the user type on the service type, if any. */
  limits: TypeLimits | undefined;
  /** The token budgets of an LLM request, the model's first (tokens.ts). */
  tokens: Budget[];
  /** The cost budgets, the model's first (cost.ts). */
  costs: CostBudget[];
  /** The token then cost windows of an LLM request, with their holds (what a reservation settles, hold.ts). */
  windows: BudgetWindow[];
  /** `limitsAdmit` KEYS of a sync request: the rate window when rated. */
  syncKeys: string[];
  /** `limitsAdmit` KEYS of an LLM request: the rate window when rated, then each token and cost window with its holds. */
  llmKeys: string[];
  /** `limitsAdmit` ARGV: whether the rate is counted, its window length, the rate. */
  admitArgs: number[];
}

/** Past this many entries nothing more is kept: consumers and user types come from callers. */
const MAX_ENTRIES = 10_000;

function measure(table: LimitTable, type: string, model: string, userType: string | undefined, consumer: string): Measures {
  const limits = table.forType(type, userType);
  const rated = limits !== undefined && limits.rate > 0;
  const service = { type, model };
  const tokens = tokenBudgets(table, service, consumer, userType, limits);
  const costs = costBudgets(table, service, consumer, userType, limits);
  const syncKeys = rated ? [limitKeys.rate(type, consumer)] : [];
  const windows = [
    ...tokens.map((budget) => budgetWindow(budget.key, "tokens", budget.periodMs)),
    ...costs.map((budget) => budgetWindow(budget.key, "cost", budget.periodMs)),
  ];
  const llmKeys = [...syncKeys, ...windows.flatMap((window) => [window.key, window.held])];
  return { limits, tokens, costs, windows, syncKeys, llmKeys, admitArgs: [rated ? 1 : 0, rated ? limits.periodMs : 0, rated ? limits.rate : 0] };
}

/**
 * The measures of a batch line: the same budgets, no request rate (a batch is one request of its
 * owner's; its lines are held to the token and dollar budgets, not to the request rate).
 */
function unrated(measures: Measures): Measures {
  if (measures.syncKeys.length === 0) return measures;
  return { ...measures, limits: measures.limits && { ...measures.limits, rate: 0 }, syncKeys: [], llmKeys: measures.llmKeys.slice(1), admitArgs: [0, 0, 0] };
}

/** The place of the models without budgets of their own, in the cache's map of models: no model's name. */
const ANY_MODEL = Symbol("a model without budgets of its own");

export class MeasuresCache {
  /**
   * Service type -> model (or ANY_MODEL) -> user type -> consumer: looked up without building a
   * key from the four. The consumer last: a map per consumer (for its one or two user types)
   * took more memory than its measures.
   */
  private readonly byType = new Map<string, Map<string | typeof ANY_MODEL, Map<string | undefined, Map<string, Measures>>>>();
  private readonly unratedOf = new WeakMap<Measures, Measures>();
  private size = 0;

  /** `of` without the request rate (a batch line's). */
  withoutRate(type: string, model: string, userType: string | undefined, consumer: string): Measures {
    const measures = this.of(type, model, userType, consumer);
    let result = this.unratedOf.get(measures);
    if (!result) this.unratedOf.set(measures, result = unrated(measures));
    return result;
  }

  constructor(private readonly table: LimitTable) {}

  of(type: string, model: string, userType: string | undefined, consumer: string): Measures {
    const place = this.table.hasModelBudgets({ type, model }, userType) ? model : ANY_MODEL;
    const kept = this.byType.get(type)?.get(place)?.get(userType)?.get(consumer);
    if (kept) return kept;
    const measures = measure(this.table, type, model, userType, consumer);
    if (this.size >= MAX_ENTRIES) return measures;
    let byModel = this.byType.get(type);
    if (!byModel) this.byType.set(type, byModel = new Map());
    let byUserType = byModel.get(place);
    if (!byUserType) byModel.set(place, byUserType = new Map());
    let byConsumer = byUserType.get(userType);
    if (!byConsumer) byUserType.set(userType, byConsumer = new Map());
    byConsumer.set(consumer, measures);
    this.size++;
    return measures;
  }
}
