/**
 * A running batch's finished lines reach the object store in segments: each line's output
 * waits in the key-value store (durable the moment the line ends), and once FLUSH_LINES are
 * waiting, one flush writes them as a segment per file (`batches/<id>/seg/<o|e>-<token>`) and
 * records the segments in the same step that drops the lines from waiting. Memory stays bounded
 * whatever the batch size; a flush that dies before that step leaves an unrecorded object
 * (deleted with the batch) and the lines still waiting for the next flush.
 */
import { compareAndDelete } from "../../../core/stores/atomic-ops.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { ObjectStore } from "../../../core/stores/objects.ts";
import { batchKeys } from "../keys.ts";
import type { FileLetter } from "./results.ts";
import type { BatchStore } from "./store.ts";

/** Output lines waiting before a flush writes them. */
export const FLUSH_LINES = 64;
/** How long a flush holds its batch's flush lock. */
const FLUSH_LEASE_MS = 60_000;

export class OutputWriter {
  private readonly flushing = new Map<string, Promise<boolean>>();

  constructor(
    private readonly store: BatchStore,
    private readonly kv: KvStore,
    private readonly objects: ObjectStore,
    private readonly uuid: () => string,
  ) {}

  /** Flushes the batch's waiting lines unless this process flushes it already; false when another flush holds it. */
  flush(batchId: string): Promise<boolean> {
    const running = this.flushing.get(batchId);
    if (running) return running;
    const flush = this.flushOnce(batchId).finally(() => this.flushing.delete(batchId));
    this.flushing.set(batchId, flush);
    return flush;
  }

  /** Resolves when this process's flushes have ended. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.flushing.values()]);
  }

  private async flushOnce(batchId: string): Promise<boolean> {
    const token = this.uuid().replace(/-/g, "");
    if (!(await this.store.lockFlush(batchId, token, FLUSH_LEASE_MS))) return false;
    const written: string[] = [];
    try {
      const pending = await this.store.pendingOutput(batchId);
      const lines = Object.keys(pending).sort((a, b) => Number(a) - Number(b));
      if (lines.length === 0) return true;
      const byFile = new Map<FileLetter, string[]>();
      for (const line of lines) {
        const value = pending[line];
        const letter = value[0] as FileLetter;
        byFile.set(letter, [...(byFile.get(letter) ?? []), value.slice(1)]);
      }
      const segments: string[] = [];
      for (const [letter, texts] of byFile) {
        const key = batchKeys.segmentObject(batchId, `${letter}-${token}`);
        await this.objects.put(key, new TextEncoder().encode(texts.join("\n") + "\n"), { contentType: "application/jsonl" });
        written.push(key);
        segments.push(`${letter}:${key}`);
      }
      if (await this.store.commitSegments(batchId, segments, lines)) {
        written.length = 0;
        return true;
      }
      return false;
    } finally {
      for (const key of written) await this.objects.delete(key).catch(() => {});
      await this.kv.run(compareAndDelete, [batchKeys.flushing(batchId)], [token]).catch(() => 0);
    }
  }
}
