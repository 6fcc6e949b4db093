/**
 * The line worker of one process: takes lines from every model's queue (each model at most
 * `batches.concurrency` lines in flight across the deployment, counted by the claim itself),
 * runs each (run-line.ts) under a lease renewed while it runs, and records its end. A line's
 * end takes the next line of its model at once; `poll` (the background task) starts the
 * models that were idle.
 *
 * Stopping: `retire` (a reload replaced this worker) takes no new line and lets the running
 * ones finish; `close` (shutdown) gives them CLOSE_GRACE_MS, then aborts the rest and puts them
 * back to run again at once (an attempt aborted this way is not counted).
 */
import type { Logger } from "../../../core/log.ts";
import type { OutputWriter } from "./output.ts";
import { FLUSH_LINES } from "./output.ts";
import { type LineRunDeps, runLine } from "./run-line.ts";
import { type BatchStore, type Entry, parseEntry } from "./store.ts";

/** A line's lease; renewed every third of it while the line runs. */
export const LINE_LEASE_MS = 30_000;
/** How long a closing process lets running lines finish before giving them back. */
export const CLOSE_GRACE_MS = 5_000;
/** Claim errors (store down) are logged at most this often. */
const ERROR_LOG_EVERY_MS = 30_000;

export interface WorkerDeps extends LineRunDeps {
  store: BatchStore;
  output: OutputWriter;
  log: Logger;
  newToken(): string;
  /** Models whose queues are served: every configured model alias. */
  models(): readonly string[];
  concurrency: number;
  /** A line ended: counted in its model's outcome metric. */
  ended(model: string, succeeded: boolean): void;
  /** Lines this process runs now, per model changed (the in-flight gauge). */
  inFlight(model: string, running: number): void;
  /** A batch may be ready to end (its last line ended, or a cancelled one has nothing in flight). */
  mayEnd(batchId: string): void;
}

interface Running {
  model: string;
  member: string;
  done: Promise<void>;
}

export class LineWorker {
  private readonly running = new Map<string, Running>();
  private readonly perModel = new Map<string, number>();
  private readonly claiming = new Set<string>();
  private readonly stopControl = new AbortController();
  private stopping = false;
  private lastErrorLog = -Infinity;

  constructor(private readonly deps: WorkerDeps) {}

  get busy(): number {
    return this.running.size;
  }

  /** Starts lines on every model that has some waiting (the background task); one read when no batch is unfinished anywhere. */
  async poll(): Promise<void> {
    try {
      if ((await this.deps.store.activeCount()) === 0) return;
    } catch (error) {
      this.logError("batch_line_claim_failed", error);
      return;
    }
    await Promise.all(this.deps.models().map((model) => this.fill(model)));
  }

  /** Resolves when no line runs in this process. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()].map((r) => r.done));
    await this.deps.output.idle();
  }

  /** Renews the leases of the lines running here (the lease task). */
  async renew(): Promise<void> {
    const byModel = new Map<string, string[]>();
    for (const run of this.running.values()) byModel.set(run.model, [...(byModel.get(run.model) ?? []), run.member]);
    const deadline = this.deps.now() + LINE_LEASE_MS;
    await Promise.all([...byModel].map(([model, members]) => this.deps.store.renew(model, members, deadline)));
  }

  retire(): Promise<void> {
    this.stopping = true;
    return this.idle();
  }

  async close(): Promise<void> {
    this.stopping = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.idle(), new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)))]);
    clearTimeout(timer);
    this.stopControl.abort();
    await this.idle();
  }

  /** Claims lines of `model` while it has room; one claiming loop per model at a time. */
  private async fill(model: string): Promise<void> {
    if (this.claiming.has(model)) return;
    this.claiming.add(model);
    try {
      while (!this.stopping && (this.perModel.get(model) ?? 0) < this.deps.concurrency) {
        let claim: Awaited<ReturnType<BatchStore["claim"]>>;
        try {
          claim = await this.deps.store.claim(model, {
            now: this.deps.now(),
            leaseMs: LINE_LEASE_MS,
            token: this.deps.newToken(),
            limit: this.deps.concurrency,
          });
        } catch (error) {
          this.logError("batch_line_claim_failed", error);
          return;
        }
        if (claim.kind === "more") continue;
        if (claim.kind !== "line") return;
        this.start(model, claim.member, parseEntry(claim.entry));
      }
    } finally {
      this.claiming.delete(model);
    }
  }

  private start(model: string, member: string, entry: Entry): void {
    this.count(model, 1);
    const done = this.run(model, member, entry)
      .catch((error: unknown) => this.deps.log.error("batch_line_crashed", { batch_id: entry.batchId, line: entry.line, error }))
      .finally(() => {
        this.running.delete(member);
        this.count(model, -1);
        if (!this.stopping) void this.fill(model);
      });
    this.running.set(member, { model, member, done });
  }

  private async run(model: string, member: string, entry: Entry): Promise<void> {
    const { store } = this.deps;
    const outcome = await runLine(this.deps, entry, this.stopControl.signal);
    if (this.stopControl.signal.aborted) {
      // Shutdown cut it off: it runs again at once elsewhere, no attempt spent.
      await store.retryAt(model, member, entry, this.deps.now());
      return;
    }
    if (outcome.kind === "gone") {
      // Its batch no longer exists: the line only leaves the running set (nothing is counted).
      await store.finish(model, member, entry, false, "e");
      return;
    }
    if (outcome.kind === "again") {
      await store.retryAt(model, member, { ...entry, attempts: outcome.attempts }, outcome.due);
      return;
    }
    const finished = await store.finish(model, member, entry, outcome.succeeded, outcome.output.letter + outcome.output.json);
    if (finished.counted) this.deps.ended(model, outcome.succeeded);
    if (finished.pending >= FLUSH_LINES) {
      void this.deps.output.flush(entry.batchId).catch((error: unknown) => this.deps.log.warn("batch_flush_failed", { batch_id: entry.batchId, error }));
    }
    if (finished.inFlight === 0 && (finished.remaining === 0 || finished.status === "cancelling")) this.deps.mayEnd(entry.batchId);
  }

  private count(model: string, by: number): void {
    const now = (this.perModel.get(model) ?? 0) + by;
    this.perModel.set(model, now);
    this.deps.inFlight(model, now);
  }

  private logError(event: string, error: unknown): void {
    const now = this.deps.now();
    if (now - this.lastErrorLog < ERROR_LOG_EVERY_MS) return;
    this.lastErrorLog = now;
    this.deps.log.error(event, { error });
  }
}
