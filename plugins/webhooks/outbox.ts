/**
 * The outbox sweep: the job store names every job that ended with a callback_url in its
 * notification outbox (`jobs.keys.notifyOutbox`, added in the same atomic op as the
 * terminal status, scored with a grace period), and creating the delivery takes it off
 * (ops.ts `deliveryCreate`). An entry still there after the grace period is a webhook whose
 * process died before persisting it (or is still reading the result): the sweep creates
 * the delivery as if `job.terminal` had fired there.
 *
 * Entries are taken under a lease (ops.ts `outboxClaim`), so replicas never sweep the same
 * job together and a sweeper dying mid-way leaves the entry to the next sweep. The create
 * is "listed": it only happens while the outbox still names the job, so a delivery that was
 * made, delivered and removed meanwhile is never made again.
 */
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import type { GatewayEvents, GatewayServices } from "../../core/plugins/types.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { Dispatcher, TerminalJob } from "./dispatcher.ts";
import { outboxClaim } from "./ops.ts";

type JobRecord = GatewayEvents["job.terminal"]["job"];

export interface OutboxSweepOptions {
  kv: KvStore;
  /** The jobs service; undefined when no job store runs in this process (nothing to sweep). */
  jobs(): GatewayServices["jobs"] | undefined;
  dispatcher: Dispatcher;
  /** The notification of a job found in the outbox (a completed job's result read from the store). */
  notification(job: JobRecord): Promise<TerminalJob>;
  /** How long a sweeper holds the entries it took before another may take them. */
  leaseMs: number;
  /** Deliveries this process attempts at once; the sweep takes no more than the room left. */
  concurrency: number;
  clock: Clock;
  log: Logger;
}

export class OutboxSweep {
  constructor(private readonly options: OutboxSweepOptions) {}

  /** Takes the due outbox entries and starts their deliveries (not waiting for the attempts). Resolves with the number taken. */
  async sweep(): Promise<number> {
    const { kv, dispatcher, clock, log } = this.options;
    const jobs = this.options.jobs();
    const room = this.options.concurrency - dispatcher.busy;
    if (!jobs || room <= 0) return 0;
    const outbox = jobs.keys.notifyOutbox;
    const now = clock.now();
    const ids = await kv.run(outboxClaim, [outbox], [now, room, now + this.options.leaseMs]);
    for (const id of ids) {
      const job = await jobs.get(id);
      if (!job || job.status === "pending" || job.status === "processing" || !job.callback_url) {
        // Consumed, expired or purged since it ended (or a foreign entry): nobody to notify about.
        await kv.zrem(outbox, id);
        log.info("webhook_outbox_entry_dropped", { job_id: id, reason: job ? "the job is not terminal or has no callback_url" : "the job is gone" });
        continue;
      }
      log.warn("webhook_outbox_recovered", { job_id: id, status: job.status, message: "the job ended without its webhook being persisted; sending it now" });
      void dispatcher.dispatch(this.options.notification(job), "listed");
    }
    return ids.length;
  }
}
