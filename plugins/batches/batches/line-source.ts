/**
 * What running a line needs to read, cached per process: its batch's record (for a few seconds:
 * the claim already checked that the batch runs) and the chunks of checked lines (the few most
 * recently used: lines of one batch are claimed in order, so a chunk serves ~100 claims).
 */
import type { ObjectStore } from "../../../core/stores/objects.ts";
import { chunkOf, readChunk } from "./chunks.ts";
import type { CheckedLine } from "./checks.ts";
import type { BatchRecord } from "./record.ts";
import type { BatchStore } from "./store.ts";

const RECORD_TTL_MS = 5_000;
const CHUNKS_KEPT = 16;

export class LineSource {
  private readonly records = new Map<string, { record: Promise<BatchRecord | null>; at: number }>();
  private readonly chunks = new Map<string, Promise<CheckedLine[] | null>>();

  constructor(
    private readonly store: BatchStore,
    private readonly objects: ObjectStore,
    private readonly now: () => number,
  ) {}

  batch(id: string): Promise<BatchRecord | null> {
    const cached = this.records.get(id);
    if (cached && this.now() - cached.at < RECORD_TTL_MS) return cached.record;
    const record = this.store.get(id);
    this.records.set(id, { record, at: this.now() });
    if (this.records.size > 1000) this.records.delete(this.records.keys().next().value as string);
    return record;
  }

  async line(batch: BatchRecord, line: number): Promise<CheckedLine | undefined> {
    const chunk = chunkOf(batch.chunks, line);
    const key = `${batch.id}:${chunk}`;
    let lines = this.chunks.get(key);
    if (lines) {
      // Most recently used last.
      this.chunks.delete(key);
    } else {
      lines = readChunk(this.objects, batch.id, chunk);
      lines.catch(() => this.chunks.delete(key));
    }
    this.chunks.set(key, lines);
    while (this.chunks.size > CHUNKS_KEPT) this.chunks.delete(this.chunks.keys().next().value as string);
    return (await lines)?.[line - batch.chunks[chunk]];
  }
}
