/**
 * Runs one claimed job to its end: pending -> processing, the backend call under the
 * job's lease (renewed while it works) with the cancel signal watched, then the terminal
 * update (completed, failed or cancelled), the events and the metrics. With tracing on,
 * all of it runs in the job's span (job-trace.ts), which ends with the relay's outcome.
 *
 * One run is one attempt. A transient failure with attempts left under the service's
 * `retry` policy (retry-policy.ts) ends the run with the job pending again, waiting in
 * the retry set until its delay has passed; a later claim (any relay's) runs it again.
 */
import type { Pricing } from "../../core/pricing/price.ts";
import type { Clock } from "../../core/clock.ts";
import { formatDuration } from "../../core/config/duration.ts";
import type { Logger } from "../../core/log.ts";
import type { GatewayEvents } from "../../core/plugins/types.ts";
import type { ObjectStore } from "../../core/stores/objects.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { ClaimedJob, JobRecord, JobStore } from "../../core/jobs/types.ts";
import { ATTR } from "../../core/telemetry/attributes.ts";
import { type BackendOutcome, callBackend } from "./backend.ts";
import { type InJobTrace, type JobSpan, untracedJobs } from "./job-trace.ts";
import type { RelayMetrics, RelayOutcome } from "./metrics.ts";
import { retryDelay, retryPolicyOf, type TransientFailure } from "./retry-policy.ts";

/** How often a running job checks for a DELETE (ms). Each check is one KV read. */
const CANCEL_POLL_MS = 200;

export interface RunDeps {
  jobs: JobStore;
  objects: ObjectStore;
  fetch: typeof fetch;
  clock: Clock;
  newId(): string;
  log: Logger;
  metrics: RelayMetrics;
  emit<E extends "job.terminal" | "relay.processed" | "job.expiry">(event: E, payload: GatewayEvents[E]): void;
  /** Prices a processed job by its seconds (the `pricing` plugin), when some model has a price. */
  pricing?: Pricing;
  leaseMs: number;
  requestTimeoutMs: number;
  /** Runs a job in its trace (default: untraced). */
  inJobTrace?: InJobTrace;
}

/** One job's run: the outcome goes to the metrics and to the job's span. */
interface Run {
  deps: RunDeps;
  claim: ClaimedJob;
  span: JobSpan;
}

function record(run: Run, outcome: RelayOutcome): void {
  run.deps.metrics.outcome(run.claim.model, outcome);
  run.span.setAttributes({ [ATTR.outcome]: outcome });
}

type StopReason = "cancelled" | "lease-lost" | "timeout" | "shutdown";

/**
 * Polls the cancel signal and renews the lease until stopped. `onStop` is called at most
 * once, when a DELETE asked to cancel or another relay took the lease over. The renewal
 * also keeps the job's record alive (JobStore.renewLease), so it runs at once too: the
 * record's pending TTL may be shorter than the first renewal interval. Each renewal tells
 * the job's new expiry (`job.expiry`), which its concurrent-job slot follows.
 */
function watch(deps: RunDeps, claim: ClaimedJob, job: JobRecord, onStop: (reason: StopReason) => void): () => Promise<void> {
  const renewEvery = Math.max(1, Math.floor(deps.leaseMs / 3 / CANCEL_POLL_MS));
  let ticks = 0;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      inFlight = tick();
    }, ms);
  };
  const tick = async () => {
    try {
      if (await deps.jobs.cancelRequested(claim.id)) return onStop("cancelled");
      if (ticks++ % renewEvery === 0) {
        if (!(await deps.jobs.renewLease(claim, deps.leaseMs, job.consumer_name))) return onStop("lease-lost");
        // Read after the renewal: never earlier than the expiry it set.
        deps.emit("job.expiry", { job, expiresAt: deps.clock.now() + deps.leaseMs + deps.jobs.ttlFor("processing") });
      }
    } catch (error) {
      // A KV blip: keep working; the lease has two more renewals before it lapses.
      deps.log.warn("relay_watch_failed", { job_id: claim.id, error });
    }
    if (!stopped) schedule(CANCEL_POLL_MS);
  };
  schedule(0);
  // Resolves once a tick under way has ended: a renewal landing after the claim ended
  // (finish, retry) would take the deleted lease back.
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await inFlight;
  };
}

async function storeResult(deps: RunDeps, job: JobRecord, stored: string): Promise<string> {
  const key = deps.jobs.keys.resultObject(job.id);
  await deps.objects.put(key, new TextEncoder().encode(stored), { contentType: "application/json" });
  return key;
}

/** Ends the claim with a terminal status; emits job.terminal when this call made it terminal. */
async function finish(
  run: Run,
  job: JobRecord,
  to: "completed" | "failed" | "cancelled",
  fields: { result_key?: string; error?: string },
  result?: unknown,
): Promise<void> {
  const { deps, claim } = run;
  const outcome = await deps.jobs.finish(claim, job, to, fields);
  if (outcome.previous === "leased") {
    record(run, "lost");
    deps.log.warn("relay_job_lost", { job_id: job.id, model: claim.model, message: "another relay holds the lease; this result is dropped" });
  } else if (!outcome.applied) {
    // Gone (expired, purged) or already terminal: nobody will read a result.
    record(run, "skipped");
  } else {
    record(run, to);
    if (fields.error) run.span.fail(fields.error);
    const finished = (await deps.jobs.get(job.id).catch(() => null)) ?? { ...job, status: to, ...fields };
    deps.emit("job.terminal", to === "completed" ? { job: finished, result } : { job: finished });
    deps.log.info("relay_job_finished", {
      job_id: job.id,
      model: claim.model,
      status: to,
      attempts: job.attempts ?? 0,
      ...(fields.error ? { error: fields.error } : {}),
    });
    return;
  }
  if (fields.result_key) await deps.objects.delete(fields.result_key).catch(() => undefined);
}

/**
 * A failed attempt: retried later when the failure is transient and the service's
 * `retry.max_attempts` allows another attempt, else the job fails. A DELETE that arrived
 * meanwhile wins: the job is cancelled, never retried.
 */
async function failOrRetry(run: Run, job: JobRecord, service: ServiceConfig, error: string, transient?: TransientFailure): Promise<void> {
  const { deps, claim } = run;
  const policy = retryPolicyOf(service);
  const attempts = job.attempts ?? 1;
  if (!transient || attempts >= policy.maxAttempts) {
    const final = transient && policy.maxAttempts > 1 ? `${error} (gave up after ${attempts} attempts, services[].retry.max_attempts)` : error;
    return await finish(run, job, "failed", { error: final });
  }
  const delayMs = retryDelay(policy, attempts, transient);
  const dueAt = deps.clock.now() + delayMs;
  const outcome = await deps.jobs.retryLater(claim, job, dueAt);
  if (outcome === "cancel") return await finish(run, job, "cancelled", {});
  if (outcome === "leased") {
    record(run, "lost");
    deps.log.warn("relay_job_lost", { job_id: job.id, model: claim.model, message: "another relay holds the lease; no retry scheduled here" });
    return;
  }
  if (outcome === "dropped") return record(run, "skipped");
  record(run, "retried");
  deps.metrics.retry(claim.model, transient.reason);
  // The record now lives a pending TTL past the due time; the job's concurrent-job slot follows.
  deps.emit("job.expiry", { job: { ...job, status: "pending" }, expiresAt: dueAt + deps.jobs.ttlFor("pending") });
  deps.log.info("relay_job_retry_scheduled", {
    job_id: job.id,
    model: claim.model,
    attempts,
    max_attempts: policy.maxAttempts,
    delay_ms: delayMs,
    reason: transient.reason,
    error,
  });
}

/** Runs a claimed job. `shutdown` aborts it when the relay stops; the job then goes back to its queue. */
export async function runJob(deps: RunDeps, claim: ClaimedJob, shutdown: AbortSignal): Promise<void> {
  const job = await deps.jobs.get(claim.id);
  if (!job || job.status !== "pending") {
    // Cancelled while queued, expired or purged: it must not run.
    await deps.jobs.drop(claim);
    // An expired record leaves its input behind; nothing can use it any more.
    if (!job) await deps.objects.delete(deps.jobs.keys.inputObject(claim.id)).catch(() => undefined);
    deps.metrics.outcome(claim.model, "skipped");
    return;
  }
  await (deps.inJobTrace ?? untracedJobs)(job, (span) => runPending({ deps, claim, span }, job, shutdown));
}

async function runPending(run: Run, job: JobRecord, shutdown: AbortSignal): Promise<void> {
  const { deps, claim } = run;
  // Counted as the attempt starts (only the lease holder gets here), so a crash mid-call still counts it.
  const attempts = (job.attempts ?? 0) + 1;
  const started = await deps.jobs.transition(job, ["pending"], "processing", { attempts });
  if (!started.applied) {
    await deps.jobs.drop(claim);
    record(run, "skipped");
    return;
  }
  const running: JobRecord = { ...job, status: "processing", attempts };
  // Starting resets the record's TTL (read after the change, so never earlier than it).
  deps.emit("job.expiry", { job: running, expiresAt: deps.clock.now() + deps.jobs.ttlFor("processing") });
  const service = deps.jobs.serviceOf(job);
  if (!service) {
    const error = `model "${job.model}" of service type "${job.service_type}" is no longer configured`;
    return await finish(run, running, "failed", { error });
  }

  const control = new AbortController();
  let reason: StopReason | undefined;
  const stop = (why: StopReason) => {
    if (reason) return;
    reason = why;
    control.abort(new Error(`job ${why}`));
  };
  const onShutdown = () => stop("shutdown");
  if (shutdown.aborted) onShutdown();
  shutdown.addEventListener("abort", onShutdown, { once: true });
  const timeout = setTimeout(() => stop("timeout"), deps.requestTimeoutMs);
  const unwatch = watch(deps, claim, job, stop);

  const startedAt = deps.clock.now();
  let outcome: BackendOutcome;
  try {
    outcome = await callBackend({ fetch: deps.fetch, objects: deps.objects, newId: deps.newId, now: () => deps.clock.now() }, running, service, control.signal);
  } catch (error) {
    // The connection failed mid-answer: a network error.
    outcome = { ok: false, error: `the backend answer could not be read: ${(error as Error).message}`, transient: { reason: "network" } };
  } finally {
    clearTimeout(timeout);
    await unwatch();
    shutdown.removeEventListener("abort", onShutdown);
  }
  const seconds = Math.max(0, (deps.clock.now() - startedAt) / 1000);
  deps.metrics.inference(job.model, seconds);
  const cost = deps.pricing?.charge({ serviceType: job.service_type, model: job.model }, { seconds });
  deps.emit("relay.processed", {
    consumer: job.consumer_name,
    userType: job.user_type,
    serviceType: job.service_type,
    model: job.model,
    seconds,
    ...(cost !== undefined ? { cost } : {}),
    ...(job.api_key_id !== undefined ? { keyId: job.api_key_id } : {}),
    ...(job.api_key_cost_period_ms !== undefined ? { keyCostPeriodMs: job.api_key_cost_period_ms } : {}),
  });

  if (reason === "lease-lost") {
    record(run, "lost");
    deps.log.warn("relay_job_lost", { job_id: job.id, model: claim.model, message: "another relay took the lease over; stopped" });
    return;
  }
  if (reason === "shutdown") {
    const released = await deps.jobs.release(claim);
    if (released === "cancel") return await finish(run, running, "cancelled", {});
    record(run, released === "requeued" ? "requeued" : "skipped");
    return;
  }
  if (reason === "cancelled") return await finish(run, running, "cancelled", {});
  if (reason === "timeout") {
    const error = `the backend did not answer within ${formatDuration(deps.requestTimeoutMs)} (relay.request_timeout)`;
    return await failOrRetry(run, running, service, error, { reason: "timeout" });
  }
  if (!outcome.ok) return await failOrRetry(run, running, service, outcome.error, outcome.transient);
  let resultKey: string;
  try {
    resultKey = await storeResult(deps, job, outcome.stored);
  } catch (error) {
    deps.log.error("relay_result_store_failed", { job_id: job.id, error });
    return await finish(run, running, "failed", { error: "the result could not be stored in the object store" });
  }
  await finish(run, running, "completed", { result_key: resultKey }, outcome.result);
}
