/**
 * A batch's checked lines, kept in the object store in chunks (`batches/<id>/lines/<n>`, JSONL
 * of `CheckedLine`) of at most CHUNK_LINES lines or CHUNK_BYTES bytes: written once while the
 * input is checked, read back a chunk at a time by whoever runs a line.
 */
import type { ObjectStore } from "../../../core/stores/objects.ts";
import { jsonlLines } from "../jsonl.ts";
import { batchKeys } from "../keys.ts";
import type { CheckedLine } from "./checks.ts";

export const CHUNK_LINES = 100;
export const CHUNK_BYTES = 1024 * 1024;

/** Collects checked lines and writes each full chunk; `starts` are the first line of each chunk. */
export class ChunkWriter {
  readonly starts: number[] = [];
  private lines: string[] = [];
  private bytes = 0;
  private count = 0;

  constructor(
    private readonly objects: ObjectStore,
    private readonly batchId: string,
  ) {}

  async add(line: CheckedLine): Promise<void> {
    const text = JSON.stringify(line);
    if (this.lines.length === 0) this.starts.push(this.count);
    this.lines.push(text);
    this.bytes += text.length;
    this.count++;
    if (this.lines.length >= CHUNK_LINES || this.bytes >= CHUNK_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.lines.length === 0) return;
    const index = this.starts.length - 1;
    await this.objects.put(batchKeys.chunkObject(this.batchId, index), new TextEncoder().encode(this.lines.join("\n") + "\n"), {
      contentType: "application/jsonl",
    });
    this.lines = [];
    this.bytes = 0;
  }
}

/** The chunk that holds `line`, by the chunks' first lines. */
export function chunkOf(starts: readonly number[], line: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= line) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The lines of one chunk, in order; null when the chunk is gone. */
export async function readChunk(objects: ObjectStore, batchId: string, chunk: number): Promise<CheckedLine[] | null> {
  const stored = await objects.get(batchKeys.chunkObject(batchId, chunk));
  if (!stored) return null;
  const lines: CheckedLine[] = [];
  for await (const line of jsonlLines(stored.body, Infinity)) {
    if (line.text) lines.push(JSON.parse(line.text) as CheckedLine);
  }
  return lines;
}

/** Deletes every object a batch kept while it ran (its chunks and segments). */
export async function deleteBatchObjects(objects: ObjectStore, batchId: string): Promise<void> {
  const keys: string[] = [];
  for await (const info of objects.list(batchKeys.batchObjects(batchId))) keys.push(info.key);
  for (const key of keys) await objects.delete(key);
}
