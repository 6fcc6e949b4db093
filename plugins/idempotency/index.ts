/**
 * Idempotent job submission (docs/design.md#idempotency): an `Idempotency-Key`, scoped per
 * consumer, is reserved atomically (SET NX) against the new job's id just before the record
 * is saved. A repeat while that job exists answers 200 with the original body and
 * `X-Idempotent-Replay: true`; a repeat after the job is gone (expired, consumed, or its
 * save failed) answers 409. Distinct or absent keys never interact.
 *
 * The key is also looked up in the `admit` stage, before the body is read and before the
 * limits' own `admit` steps (this plugin registers first, plugins/index.ts): a plain retry is
 * answered without uploading and storing its file a second time, and a replay, which creates
 * nothing, is never refused for a job slot, a processing-time budget or a request-rate window
 * it would not use (docs/design.md#idempotency: a repeated key returns the original). A new key
 * still goes through every limit. Two identical requests racing past that
 * check both upload; the reservation picks one, and the other deletes its file and
 * replays the winner (waiting briefly for the winner's record to be saved). A repeat that
 * finds the key reserved only just now (its winner, maybe on another replica, is between
 * reservation and save) waits for the record the same way instead of answering 409.
 *
 * It plugs into `POST /jobs/{type}` through the job store's submission hooks.
 */
import { durationMs } from "../../core/config/duration.ts";
import { fieldsOf } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import type { JobAccepted, JobStore } from "../../core/jobs/types.ts";
import { idempotencyFields } from "./config.ts";

const HEADER = "idempotency-key";
const MAX_KEY_LENGTH = 255;
/** How long a losing racer waits for the winner's record (the winner saves right after reserving). */
const WINNER_WAIT_MS = 2_000;
const WINNER_POLL_MS = 25;

type Outcome = "created" | "replayed" | "conflict";

function keyOf(ctx: RequestContext): string | undefined {
  const value = ctx.request.headers.get(HEADER)?.trim();
  if (value === undefined || value === "") return undefined;
  if (value.length > MAX_KEY_LENGTH) throw errors.badRequest(`Idempotency-Key is longer than ${MAX_KEY_LENGTH} characters`);
  return value;
}

function parseAccepted(text: string): JobAccepted | undefined {
  try {
    const value = JSON.parse(text) as Partial<JobAccepted>;
    return typeof value.job_id === "string" ? (value as JobAccepted) : undefined;
  } catch {
    return undefined;
  }
}

export default definePlugin({
  name: "idempotency",
  dependsOn: ["async-jobs"],
  sectionFields: [idempotencyFields],
  setup(api) {
    const jobs: JobStore = api.use("jobs");
    // Positive: config validation refuses 0s (config.ts).
    const ttlMs = durationMs(fieldsOf(api.config, idempotencyFields).idempotency_ttl);
    const requests = api.metrics.counter({
      name: "svc_idempotency_requests_total",
      help: "Job submissions carrying an Idempotency-Key, by service type and outcome (created, replayed, conflict)",
      labelNames: ["service_type", "outcome"],
    });
    const count = (ctx: RequestContext, outcome: Outcome) => requests.inc({ service_type: ctx.serviceType, outcome });

    const replay = (ctx: RequestContext, original: JobAccepted): Response => {
      count(ctx, "replayed");
      return new Response(JSON.stringify(original), {
        status: 200,
        headers: { "content-type": "application/json", "x-idempotent-replay": "true" },
      });
    };
    const conflict = (ctx: RequestContext, key: string): Response => {
      count(ctx, "conflict");
      return errors
        .idempotencyConflict(`Idempotency-Key "${key}" was already used for a job that no longer exists; send a new key to submit again`)
        .toResponse();
    };

    /** The key names a job of another service type: replaying it would answer a different request. */
    const otherType = (ctx: RequestContext, key: string, original: JobAccepted): Response => {
      count(ctx, "conflict");
      return errors
        .idempotencyConflict(
          `Idempotency-Key "${key}" was already used for job ${original.job_id} of service type "${original.service_type}"; send a new key for a job of service type "${ctx.serviceType}"`,
        )
        .toResponse();
    };

    /** What an already-reserved key answers: its job while it exists, else 409. */
    const answerFor = async (ctx: RequestContext, key: string, stored: string, waitMs: number): Promise<Response> => {
      const original = parseAccepted(stored);
      if (!original) return conflict(ctx, key);
      if (original.service_type !== ctx.serviceType) return otherType(ctx, key, original);
      // Counted in polls, not clock time: the clock may be a test's manual one.
      for (let polls = Math.ceil(waitMs / WINNER_POLL_MS);; polls--) {
        if (await api.kv.exists(jobs.keys.record(original.job_id))) return replay(ctx, original);
        if (polls <= 0) return conflict(ctx, key);
        await new Promise((resolve) => setTimeout(resolve, WINNER_POLL_MS));
      }
    };

    const storeError = () => errors.storeUnavailable("the idempotency key could not be checked: the key-value store is unavailable; try again");

    const replayIfKnown = async (ctx: RequestContext, key: string): Promise<Response | undefined> => {
      // An unknown service type answers its 404 in resolve, as it does without the key.
      if (api.registry.servicesOfType(ctx.serviceType).length === 0) return undefined;
      const storeKey = jobs.keys.idempotency(ctx.principal.consumer, key);
      const [stored, ttlLeftMs] = await Promise.all([api.kv.get(storeKey), api.kv.pttl(storeKey)]).catch(() => {
        throw storeError();
      });
      if (stored === null) return undefined;
      // Reserved within the wait: the winner is about to save its record (a key reserved by a
      // replica with a shorter idempotency_ttl looks older than it is, and answers 409 at once).
      const justReserved = ttlLeftMs >= 0 && ttlMs - ttlLeftMs < WINNER_WAIT_MS;
      return await answerFor(ctx, key, stored, justReserved ? WINNER_WAIT_MS : 0);
    };
    // Synchronous when there is nothing to look up (every sync and LLM request): the pipeline
    // awaits only a promise, and an async step costs a promise and a microtask turn per request.
    api.stage("admit", function replayIdempotentSubmission(ctx) {
      // Only job submissions carry idempotency keys (docs/design.md#idempotency).
      if (ctx.mode !== "async") return undefined;
      const key = keyOf(ctx);
      return key === undefined ? undefined : replayIfKnown(ctx, key);
    });

    jobs.addSubmissionHook({
      name: "idempotency",
      async beforeSave(ctx, accepted) {
        const key = keyOf(ctx);
        if (key === undefined) return undefined;
        const storeKey = jobs.keys.idempotency(ctx.principal.consumer, key);
        // Twice: a key that expires between the reservation and the read is free again.
        for (let attempt = 0; attempt < 2; attempt++) {
          const reserved = await api.kv.setIfAbsent(storeKey, JSON.stringify(accepted), ttlMs).catch(() => {
            throw storeError();
          });
          if (reserved) return undefined;
          const stored = await api.kv.get(storeKey).catch(() => {
            throw storeError();
          });
          if (stored !== null) return await answerFor(ctx, key, stored, WINNER_WAIT_MS);
        }
        return conflict(ctx, key);
      },
      afterSave(ctx) {
        if (keyOf(ctx) !== undefined) count(ctx, "created");
      },
    });
  },
});
