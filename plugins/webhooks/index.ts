/**
 * Durable signed job-completion webhooks (docs/design.md#webhooks). Runs in the gateway and in
 * relay processes: a webhook is sent by the process where the job ends, and every process
 * polls the shared retry schedule (the atomic claim keeps replicas from sending the same
 * attempt twice). Deliveries start from the `job.terminal` event (async-jobs, relay), and
 * from the job store's notification outbox for a job whose process died before it
 * persisted the delivery (outbox.ts). Offers the `webhooks` service so job submission can
 * validate `callback_url` (400 with the reason) before accepting a job. In the gateway it
 * serves the admin view of the retry queue and the dead letters, with redelivery (deadletters.ts).
 */
import { durationMs } from "../../core/config/duration.ts";
import { definePlugin, type GatewayEvents } from "../../core/plugins/types.ts";
import { webhooksSection } from "./config.ts";
import { webhooksPanel } from "./console-panel.ts";
import { registerWebhookAdminRoutes, WebhookAdmin } from "./deadletters.ts";
import { Dispatcher, type EventNotification, notificationBody, type TerminalJob } from "./dispatcher.ts";
import { webhooksOpenApi } from "./openapi.ts";
import { OutboxSweep } from "./outbox.ts";
import { DeliveryQueue } from "./queue.ts";
import { checkCallbackUrl } from "./target.ts";

export interface WebhookService {
  /** Null when `url` may be used as a callback URL, else the reason it is refused (for a 400). */
  validateCallbackUrl(url: string): Promise<string | null>;
  /**
   * Sends a signed notification of something other than a job (a batch's end) with the jobs'
   * signing, durable retries and dead letters; one delivery per `id`. Resolves once the inline
   * attempt settled (the retries are persisted before it); never rejects.
   */
  notify(event: EventNotification): Promise<void>;
}

declare module "../../core/plugins/types.ts" {
  interface GatewayServices {
    webhooks: WebhookService;
  }
}

/** How often each process looks for due retries; bounds how late a retry can be. */
const POLL_MS = 250;
/** Retries one process attempts at once. */
const CONCURRENCY = 32;
/** Time beyond the attempt timeout before an unfinished attempt's delivery may be taken again. */
const LEASE_MARGIN_MS = 15_000;
/** Kept beyond the whole retry schedule, so only records whose schedule entry was lost expire. */
const RECORD_TTL_MARGIN_MS = 24 * 3_600_000;
/** After a failed poll (store down), wait this long before polling again: one log line, not four a second. */
const POLL_PAUSE_AFTER_FAILURE_MS = 5_000;
/** How often each process sweeps the notification outbox; entries are due only after its grace period anyway. */
const OUTBOX_SWEEP_MS = 5_000;

export default definePlugin({
  name: "webhooks",
  // Reads job records and results from the job store when async jobs are on (at delivery time).
  optionalDependsOn: ["async-jobs"],
  section: webhooksSection,
  roles: ["gateway", "relay"],
  openapi: webhooksOpenApi,
  consolePanels: [webhooksPanel],
  setup(api) {
    const settings = api.config.webhooks;
    // Positive: config validation refuses 0s (core/config/load.ts).
    const timeoutMs = durationMs(settings.timeout);
    const backoffMs = durationMs(settings.retry_backoff);
    const maxBackoffMs = durationMs(settings.max_backoff);
    const leaseMs = timeoutMs + LEASE_MARGIN_MS;
    const recordTtlMs = settings.max_retries * (maxBackoffMs + leaseMs) + RECORD_TTL_MARGIN_MS;

    const deliveries = api.metrics.counter({
      name: "svc_webhook_deliveries_total",
      help: "Webhook deliveries by final result (delivered or deadletter)",
      labelNames: ["result"],
    });
    for (const result of ["delivered", "deadletter"]) deliveries.inc({ result }, 0);
    const depth = api.metrics.gauge({
      name: "svc_webhook_retry_queue_depth",
      help: "Webhook deliveries waiting for a retry or being attempted (all replicas)",
      // Read from the shared store by every worker: the same value, not a share of it.
      aggregator: "max",
    });

    const policy = { allowPrivateNetworks: settings.allow_private_networks, lookupHost: api.lookupHost };
    // Looked up when used: async-jobs sets up after this plugin, and may not run at all.
    const jobs = () => (api.has("jobs") ? api.use("jobs") : undefined);
    const queue = new DeliveryQueue(api.kv, recordTtlMs, () => jobs()?.keys.notifyOutbox);
    const dispatcher = new Dispatcher({
      queue,
      attempt: { ...policy, fetchPinned: api.fetchPinned, signingSecret: settings.signing_secret, timeoutMs, now: () => api.clock.now() },
      maxAttempts: settings.max_retries,
      backoffMs,
      maxBackoffMs,
      leaseMs,
      concurrency: CONCURRENCY,
      clock: api.clock,
      log: api.log,
      observe: {
        delivered: () => deliveries.inc({ result: "delivered" }),
        deadLettered: () => deliveries.inc({ result: "deadletter" }),
        depth: (value) => depth.set(value),
      },
      onDelivered: async (record) => {
        // With persists_result=false (the job store's to say) the first successful delivery consumes
        // a completed job's result (record and result object deleted); failed and cancelled jobs have none.
        if (record.status !== "completed" || !api.has("jobs")) return;
        const jobs = api.use("jobs");
        if (jobs.persistsResult) return;
        const job = await jobs.get(record.job_id);
        if (job) await jobs.consume(job);
      },
    });

    api.provide("webhooks", {
      async validateCallbackUrl(url) {
        const checked = await checkCallbackUrl(url, policy);
        return checked.ok ? null : checked.reason;
      },
      notify: (event) => dispatcher.dispatchEvent(event),
    });

    api.on("job.terminal", (event) => {
      if (event.job.callback_url) void dispatcher.dispatch(terminalJob(event));
    });

    /**
     * A task against the store that pauses after a failure (store down): one log line per
     * pause, not one per tick. What it works on stays in the store for the next run.
     */
    const storeTask = (name: string, everyMs: number, failedEvent: string, run: () => Promise<unknown>) => {
      let pausedUntil = 0;
      api.task({
        name,
        everyMs,
        runAtStart: true,
        run: async (signal) => {
          if (signal.aborted || api.clock.now() < pausedUntil) return;
          try {
            await run();
          } catch (error) {
            pausedUntil = api.clock.now() + POLL_PAUSE_AFTER_FAILURE_MS;
            api.log.warn(failedEvent, { error, retry_in_ms: POLL_PAUSE_AFTER_FAILURE_MS });
          }
        },
      });
    };
    storeTask("webhooks.retries", POLL_MS, "webhook_retry_poll_failed", () => dispatcher.poll());
    const outbox = new OutboxSweep({
      kv: api.kv,
      jobs,
      dispatcher,
      notification: (job) => terminalJob({ job }),
      leaseMs,
      concurrency: CONCURRENCY,
      clock: api.clock,
      log: api.log,
    });
    // A taken outbox entry that fails is due again when its lease ends.
    storeTask("webhooks.outbox", OUTBOX_SWEEP_MS, "webhook_outbox_sweep_failed", () => outbox.sweep());
    if (api.role === "gateway") {
      const admin = new WebhookAdmin({
        queue,
        now: () => api.clock.now(),
        rebuildBody: async (jobId) => {
          const job = await jobs()?.get(jobId);
          return job && job.callback_url ? notificationBody(await terminalJob({ job })) : undefined;
        },
      });
      registerWebhookAdminRoutes(api, admin);
    }
    // Attempts under way finish (bounded by the timeout) before the runtime closes.
    api.onClose(() => dispatcher.idle());

    /** The notification of a job event; a completed job's result is read when the emitter had none at hand. */
    async function terminalJob({ job, result }: GatewayEvents["job.terminal"]): Promise<TerminalJob> {
      const body = job.status === "completed" && result === undefined && api.has("jobs") ? await api.use("jobs").readResult(job) : result;
      return {
        jobId: job.id,
        serviceType: job.service_type,
        status: job.status,
        result: body,
        error: job.error ?? "",
        completedAt: job.completed_at ?? api.clock.now(),
        callbackUrl: job.callback_url ?? "",
      };
    }
  },
});
