/**
 * Limits (docs/design.md#limits and docs/design.md#sync-concurrency-cap): request rate, token
 * budget, concurrent async jobs, processing time and the sync concurrency cap, all in the shared KV
 * store so every replica counts against the same numbers, and all failing open on store errors
 * (docs/design.md#failing-open).
 *
 * Where each check runs (the core owns the order, core/pipeline/pipeline.ts):
 *   async (`POST /jobs/{type}`), stage `admit`, before the upload is read
 *   (docs/design.md#job-submission):
 *     request rate -> processing time -> concurrent jobs (reserved last, so no other
 *     check can refuse a request after it took a slot). An idempotent replay is answered
 *     before these (the idempotency plugin's admit step registers first): it needs no slot.
 *   sync and LLM, stage `limits`, after routing, visibility and policy
 *   (docs/design.md#check-order):
 *     request rate -> token budget (LLM) -> concurrency cap (503); the first two are one
 *     store operation (sync-limits.ts)
 *
 * An LLM request whose budgets hold takes its estimated tokens and cost in the same store
 * operation as the checks, and its answer's count replaces them (hold.ts).
 *
 * Counting that happens after the response comes from events: `llm.usage` (tokens),
 * `relay.processed` (inference seconds), `job.expiry` (a job's record, and so its slot,
 * lives longer) and `job.terminal` (a job's slot is free). The
 * relay may run in its own process, so this plugin also runs in relay processes, where it
 * only listens to those events, unless requests run there too (`api.runsRequests`: a relay
 * running batch lines), which then meet the same checks as in a gateway.
 *
 * Everything is derived from the config once, when the runtime is built; hot reload
 * builds a new runtime, so `rate_limits` and `services` changes apply at once.
 */
import type { RequestContext } from "../../core/pipeline/context.ts";
import { fieldsOf } from "../../core/config/schema.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { budgetReserveFields, limitServiceFields, rateLimitsSection } from "./config.ts";
import type {} from "../../core/jobs/types.ts";
import { convertJobSlot, extendJobSlot, type JobSlotDeps, releaseJobSlot, reserveJobSlot } from "./concurrent-jobs.ts";
import type { LimitDeps } from "./deps.ts";
import { limitMetrics } from "./metrics.ts";
import { addProcessingTime, checkProcessingTime } from "./processing-time.ts";
import { checkCredentialLimits, countCredentialTokens } from "./credential.ts";
import { checkRequestRate } from "./request-rate.ts";
import { syncCap } from "./sync-cap.ts";
import { MeasuresCache } from "./measures.ts";
import { LimitTable } from "./table.ts";
import { checkSyncLimits } from "./sync-limits.ts";
import { countTokens } from "./tokens.ts";
import { checkAsyncCost, countCost } from "./cost.ts";
import { limitWindows } from "./windows.ts";
import type {} from "../../core/limits/windows.ts";

/** The jobs' record TTL when no job store is around to say (its 2 h safety net). */
const DEFAULT_PENDING_TTL_MS = 2 * 60 * 60 * 1000;

export default definePlugin({
  name: "limits",
  // Counts async submissions in the job store when async jobs are on; prices what an LLM
  // request may cost, for the dollar budgets it holds while it runs, when some model has a price;
  // asks the LLM proxy whether a streamed answer's tokens are counted (once all are set up).
  optionalDependsOn: ["async-jobs", "pricing", "llm-proxy"],
  // Its steps run after those of auth and policies in a shared stage (they leave the principal
  // and the policy quota), and after an idempotent replay (a replay counts against no limit).
  // Before the LLM proxy, which it asks only once every plugin is set up.
  after: ["auth", "policies", "idempotency"],
  before: ["llm-proxy"],
  section: rateLimitsSection,
  serviceFields: limitServiceFields,
  sectionFields: [budgetReserveFields],
  roles: ["gateway", "relay"],
  setup(api) {
    const table = new LimitTable(api.config);
    const pricing = api.has("pricing") ? api.use("pricing") : undefined;
    const deps: LimitDeps = {
      kv: api.kv,
      clock: api.clock,
      log: api.log,
      metrics: limitMetrics(api.metrics),
      table,
      measures: new MeasuresCache(table),
      // Without prices nothing costs, so no cost budget can refuse and the currency is never shown.
      currency: pricing?.currency ?? "",
      pricing,
      reserveTokenBudgets: fieldsOf(api.config, budgetReserveFields).reserve_token_budgets,
      // Set once every plugin is set up (below): false where the LLM proxy is off.
      countStreamedTokens: false,
      newId: () => api.ids.newId(),
    };
    api.onReady(() => {
      deps.countStreamedTokens = api.has("llm") && api.use("llm").countStreamedTokens;
    });

    // Counting after the fact, in whichever process the event happens. The conditions in front
    // skip the calls that would do nothing (each async call costs a promise per response).
    api.on("llm.usage", (event) => {
      // A request that holds part of its budgets: the answer's count replaces the holds (hold.ts).
      if (event.hold?.settle(event)) return;
      countTokens(deps, event);
      const key = event.credential;
      if (key) void countCredentialTokens(deps, event);
      if (event.counted && event.cost !== undefined) {
        void countCost(deps, event, key && key.costRate > 0 ? { id: key.id, periodMs: key.costPeriodMs } : undefined);
      }
    });
    api.on("relay.processed", (event) => {
      void addProcessingTime(deps, event);
      // The job record kept its key's cost window (saved at submission).
      void countCost(
        deps,
        event,
        event.keyId !== undefined && event.keyCostPeriodMs !== undefined ? { id: event.keyId, periodMs: event.keyCostPeriodMs } : undefined,
      );
    });
    api.on("job.expiry", ({ job, expiresAt }) => void extendJobSlot(deps, job, expiresAt));
    api.on("job.terminal", ({ job }) => void releaseJobSlot(deps, job));
    if (!api.runsRequests) return;

    api.provide("limitWindows", limitWindows(api.kv, api.clock, api.log, table));

    // A saved job's slot lives as long as its pending record; `job.expiry` extends it when
    // the record's life is extended (concurrent-jobs.ts).
    const jobs = api.has("jobs") ? api.use("jobs") : undefined;
    const slotDeps: JobSlotDeps = {
      ...deps,
      pendingTtlMs: () => jobs?.ttlFor("pending") ?? DEFAULT_PENDING_TTL_MS,
    };
    jobs?.addSubmissionHook({ name: "limits", afterSave: (ctx, job) => convertJobSlot(slotDeps, ctx, job) });

    const admitAsync = async (ctx: RequestContext, consumer: string): Promise<void> => {
      const limits = table.forType(ctx.serviceType, ctx.principal.userType);
      // An API key's own limits, before anything takes a slot.
      if (ctx.principal.limits) await checkCredentialLimits(deps, ctx, ctx.principal.limits);
      if (limits) {
        await checkRequestRate(deps, ctx.serviceType, consumer, ctx.principal.userType, limits);
        await checkProcessingTime(deps, ctx, consumer, limits);
      }
      // The type's cost budgets when it has rate_limits, and the API key's own.
      await checkAsyncCost(deps, ctx.serviceType, ctx.service?.model ?? "", consumer, ctx.principal.userType, limits, ctx.principal.limits);
      if (limits) await reserveJobSlot(slotDeps, ctx, consumer, limits);
    };
    // Synchronous for sync and LLM requests: an async step costs a promise and a microtask turn.
    api.stage("admit", function admitAsyncLimits(ctx) {
      const consumer = ctx.principal.consumer;
      // Anonymous callers bypass every limit (docs/design.md#request-rate).
      if (ctx.mode !== "async" || consumer === undefined) return;
      return admitAsync(ctx, consumer);
    });

    const acquireSyncSlot = syncCap(deps);
    const enforceAfter = async (ctx: RequestContext, checked: Promise<void> | undefined): Promise<void> => {
      await checked;
      if (ctx.principal.limits) await checkCredentialLimits(deps, ctx, ctx.principal.limits);
      // The cap protects the model's backends, so it counts anonymous requests too.
      if (ctx.service) await acquireSyncSlot(ctx, ctx.service);
    };
    api.stage("limits", function enforceSyncLimits(ctx) {
      if (ctx.mode === "async") return;
      const consumer = ctx.principal.consumer;
      const checked = consumer !== undefined ? checkSyncLimits(deps, ctx, ctx.service, consumer) : undefined;
      // The consumer's check alone is returned as it is: an async step costs a promise and a microtask turn.
      if (!ctx.principal.limits && !(ctx.service && ctx.service.max_concurrent_sync > 0)) return checked;
      return enforceAfter(ctx, checked);
    });
  },
});
