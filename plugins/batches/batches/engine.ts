/**
 * The batch engine of one runtime: the store, the line worker, the output writer and the
 * sweep, wired to the runtime's stores, clock, registry and request handling. Both batch APIs
 * create and read their batches through it.
 */
import type { PluginApi } from "../../../core/plugins/types.ts";
import type { BatchesConfig } from "../config.ts";
import type { FileStore } from "../files/store.ts";
import { newId } from "../ids.ts";
import { spanMs } from "../span.ts";
import type { LineRules } from "./checks.ts";
import { LineSource } from "./line-source.ts";
import { OutputWriter } from "./output.ts";
import { pathOf } from "./run-line.ts";
import type { BatchApi, BatchRecord } from "./record.ts";
import { BatchStore, ID_PREFIX } from "./store.ts";
import { deleteBatchObjects } from "./chunks.ts";
import { BatchSweep, CHECK_MS, SWEEP_LEASE_MS } from "./sweep.ts";
import { checkInput, enqueueRest, type Validated, type ValidationDeps } from "./validate.ts";
import { LineWorker } from "./worker.ts";

const MIB = 1024 * 1024;

/** What a new batch is made of (its API's request, checked). */
export interface NewBatch {
  api: BatchApi;
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  metadata: Record<string, string> | null;
  callback_url?: string;
}

/** What the engine reports as it works (metrics, webhooks). */
export interface EngineEvents {
  ended(batch: BatchRecord): void;
  line(model: string, outcome: "succeeded" | "failed" | "expired" | "cancelled"): void;
  inFlight(model: string, running: number): void;
}

export class BatchEngine {
  readonly store: BatchStore;
  readonly worker: LineWorker;
  readonly sweep: BatchSweep;
  private readonly output: OutputWriter;
  private readonly retentionMs: number;
  private readonly maxLineBytes: number;

  constructor(
    private readonly api: PluginApi,
    private readonly section: BatchesConfig,
    private readonly files: FileStore,
    events: EngineEvents,
  ) {
    const now = () => api.clock.now();
    const uuid = () => api.ids.newId();
    this.retentionMs = spanMs(section.retention) ?? 0;
    this.maxLineBytes = Math.floor((api.config.server.max_body_mb || 1) * MIB);
    this.store = new BatchStore(api.kv);
    this.output = new OutputWriter(this.store, api.kv, api.objects, uuid);
    const models = () => [...new Set(api.registry.models().map((service) => service.model))];
    this.worker = new LineWorker({
      store: this.store,
      output: this.output,
      source: new LineSource(this.store, api.objects, now),
      maxAttempts: section.max_attempts,
      concurrency: section.concurrency,
      now,
      newRequestId: uuid,
      newToken: () => uuid().replace(/-/g, "").slice(0, 16),
      log: api.log,
      models,
      dispatch: async (principal, request) => {
        const response = await api.dispatchAs(principal, request, "batch");
        return { response, ctx: api.contextOf(request) };
      },
      ended: (model, succeeded) => events.line(model, succeeded ? "succeeded" : "failed"),
      inFlight: (model, running) => events.inFlight(model, running),
      mayEnd: (batchId) => void this.store.schedule(batchId, now()).catch(() => {}),
    });
    this.sweep = new BatchSweep({
      store: this.store,
      files,
      objects: api.objects,
      output: this.output,
      now,
      newRequestId: uuid,
      retentionMs: this.retentionMs,
      unfinished: (model, ending) => events.line(model, ending),
      log: api.log,
      maxLines: section.max_lines,
      maxLineBytes: this.maxLineBytes,
      models,
      rulesFor: (batch) => this.rulesFor(batch),
      ended: (batch) => events.ended(batch),
    });
  }

  /** The window's length, or undefined when it is not one of `batches.completion_windows`. */
  windowMs(window: string): number | undefined {
    return this.section.completion_windows.includes(window) ? spanMs(window) : undefined;
  }

  /** Saves a new batch (validated in the background by the sweep); with an Idempotency-Key already used, the batch it created. */
  async create(
    owner: { owner: string; principal: BatchRecord["principal"] },
    input: NewBatch,
    idempotencyKey?: string,
  ): Promise<{ batch: BatchRecord; replay: boolean } | { gone: string }> {
    const now = this.api.clock.now();
    const record = this.draft(owner, input);
    const idempotency = idempotencyKey === undefined ? undefined : { key: idempotencyKey, ttlMs: IDEMPOTENCY_TTL_MS };
    const saved = await this.store.create(record, now, idempotency);
    if (saved.created) return { batch: record, replay: false };
    const original = await this.store.get(saved.id);
    return original ? { batch: original, replay: true } : { gone: saved.id };
  }

  /** A new batch's record, not saved yet (its id is known before its lines are checked). */
  draft(owner: { owner: string; principal: BatchRecord["principal"] }, input: NewBatch): BatchRecord {
    const now = this.api.clock.now();
    const windowMs = this.windowMs(input.completion_window) ?? 0;
    return {
      id: newId(ID_PREFIX[input.api], now, this.api.ids.newId()),
      api: input.api,
      owner: owner.owner,
      principal: owner.principal,
      endpoint: input.endpoint,
      input_file_id: input.input_file_id,
      completion_window: input.completion_window,
      status: "validating",
      created_at: Math.floor(now / 1000),
      expires_at: Math.floor((now + windowMs) / 1000),
      expires_ms: now + windowMs,
      total: 0,
      completed: 0,
      failed: 0,
      in_flight: 0,
      metadata: input.metadata,
      callback_url: input.callback_url,
      output_file_id: this.files.newFileId(),
      error_file_id: this.files.newFileId(),
      chunks: [],
      enqueued: 0,
    };
  }

  /** Checks a drafted batch's input now (its chunks are written under its id); nothing is saved. */
  check(batch: BatchRecord): Promise<Validated> {
    return checkInput(batch, this.rulesFor(batch), this.validation(batch.id));
  }

  /**
   * Saves a batch whose lines were checked already, running, and queues its lines; with an
   * Idempotency-Key already used, the batch it created (the checked lines are then dropped).
   */
  async createChecked(
    batch: BatchRecord,
    checked: Extract<Validated, { ok: true }>,
    idempotencyKey?: string,
  ): Promise<{ batch: BatchRecord; replay: boolean } | { gone: string }> {
    const now = this.api.clock.now();
    const running: BatchRecord = {
      ...batch,
      status: "in_progress",
      in_progress_at: Math.floor(now / 1000),
      total: checked.total,
      chunks: checked.chunks,
      enqueued: 0,
    };
    const idempotency = idempotencyKey === undefined ? undefined : { key: idempotencyKey, ttlMs: IDEMPOTENCY_TTL_MS };
    const saved = await this.store.create(running, Math.min(running.expires_ms, now + CHECK_MS), idempotency);
    if (!saved.created) {
      await deleteBatchObjects(this.api.objects, batch.id);
      const original = await this.store.get(saved.id);
      return original ? { batch: original, replay: true } : { gone: saved.id };
    }
    await enqueueRest(running, this.validation(batch.id), checked.models);
    return { batch: running, replay: false };
  }

  private validation(id: string): ValidationDeps {
    return {
      store: this.store,
      files: this.files,
      objects: this.api.objects,
      maxLines: this.section.max_lines,
      maxLineBytes: this.maxLineBytes,
      now: () => this.api.clock.now(),
      keepAlive: () => this.store.schedule(id, this.api.clock.now() + SWEEP_LEASE_MS, "extend"),
    };
  }

  /** Asks a batch to stop: no new line starts, the running ones finish. The record after the call. */
  async cancel(batch: BatchRecord): Promise<BatchRecord> {
    const now = this.api.clock.now();
    const before = await this.store.transition(batch.id, ["validating", "in_progress"], "cancelling", {
      cancelling_at: Math.floor(now / 1000),
      ending: "cancelled",
    });
    if (before === "validating" || before === "in_progress") await this.store.schedule(batch.id, now);
    return (await this.store.get(batch.id)) ?? batch;
  }

  /** What every line of `batch` must pass, for its owner. */
  rulesFor(batch: BatchRecord): LineRules {
    const path = pathOf(batch);
    const ctx = this.api.newContext(new Request(`http://gateway.batch${path}`, { method: "POST" }), "llm", "");
    ctx.principal = batch.principal;
    const caller = this.api.modelAccess.of(ctx);
    const services = this.api.registry.matchPath(path)?.services ?? [];
    return {
      api: batch.api,
      endpoint: path,
      modelFor: (name) => {
        const service = services.find((s) => s.model === name);
        return service && caller.mayUse(service) ? service.model : undefined;
      },
    };
  }

  /** Resolves when this process's lines, flushes and batch work have ended (tests). */
  async idle(): Promise<void> {
    await this.worker.idle();
    await this.sweep.idle();
  }
}

/** How long an Idempotency-Key names the batch it created (as a job's, by default). */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
