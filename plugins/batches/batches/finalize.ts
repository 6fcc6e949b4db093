/**
 * A batch's end: its last waiting lines are written, its files assembled from the segments
 * (streamed, one segment at a time), the lines that never ended listed as expired or
 * cancelled, and its final status set. Idempotent: the file ids were reserved at creation, so
 * a finalization that dies is done again by the sweep, writing the same files.
 */
import type { ObjectStore } from "../../../core/stores/objects.ts";
import type { FileStore, NewFile } from "../files/store.ts";
import { readChunk } from "./chunks.ts";
import type { OutputWriter } from "./output.ts";
import { type FileLetter, unansweredLine } from "./results.ts";
import type { BatchEnding, BatchRecord, BatchStatus } from "./record.ts";
import type { BatchStore } from "./store.ts";

export interface FinalizeDeps {
  store: BatchStore;
  files: FileStore;
  objects: ObjectStore;
  output: OutputWriter;
  now(): number;
  newRequestId(): string;
  retentionMs: number;
  /** A line that never ended, counted when the batch ends (metrics). */
  unfinished(model: string, ending: Exclude<BatchEnding, "completed">): void;
}

const encoder = new TextEncoder();

/** The status field of each end. */
const ENDED_AT: Record<BatchEnding, "completed_at" | "expired_at" | "cancelled_at"> = {
  completed: "completed_at",
  expired: "expired_at",
  cancelled: "cancelled_at",
};

/**
 * Finalizes a batch being finalized (or cancelled): "ended" when this call set its final status,
 * "again" when it must be tried later (another process's flush holds it), "already" when another
 * finalization ended it first.
 */
export async function finalize(batch: BatchRecord, ending: BatchEnding, deps: FinalizeDeps): Promise<"ended" | "again" | "already"> {
  for (;;) {
    if (!(await deps.output.flush(batch.id))) return "again";
    if (Object.keys(await deps.store.pendingOutput(batch.id)).length === 0) break;
  }
  // The counts as they are now: every line that ended is in them, and none ends any more.
  const final = (await deps.store.get(batch.id)) ?? batch;
  const segments = await deps.store.segments(batch.id);
  const unfinished = ending === "completed" ? 0 : final.total - final.completed - final.failed;
  const withUnfinished: FileLetter = final.api === "anthropic" ? "o" : "e";
  const counts: Record<FileLetter, number> = {
    o: (final.api === "anthropic" ? final.completed + final.failed : final.completed) + (withUnfinished === "o" ? unfinished : 0),
    e: (final.api === "anthropic" ? 0 : final.failed) + (withUnfinished === "e" ? unfinished : 0),
  };
  const ids: Record<FileLetter, string> = { o: final.output_file_id, e: final.error_file_id };
  for (const letter of ["o", "e"] as const) {
    if (counts[letter] === 0) continue;
    const parts = segments.filter((segment) => segment.startsWith(`${letter}:`)).map((segment) => segment.slice(2));
    const file: NewFile = {
      owner: final.owner,
      filename: `${final.id}_${letter === "o" ? (final.api === "anthropic" ? "results" : "output") : "error"}.jsonl`,
      purpose: "batch_output",
      contentType: "application/jsonl",
      body: streamOf(concatenate(deps.objects, parts, letter === withUnfinished && unfinished > 0 ? unfinishedLines(final, ending, deps) : undefined)),
    };
    await deps.files.create(file, ids[letter]);
  }
  const from: BatchStatus[] = ending === "cancelled" ? ["cancelling"] : ["finalizing"];
  const nowSeconds = Math.floor(deps.now() / 1000);
  const ended = await deps.store.end(final.id, from, ending, deps.retentionMs, {
    [ENDED_AT[ending]]: nowSeconds,
    has_output: counts.o > 0,
    has_errors: counts.e > 0,
  }, deps.now());
  return ended ? "ended" : "already";
}

/** The segments' bytes one after the other, then the extra lines. */
async function* concatenate(objects: ObjectStore, keys: readonly string[], extra: AsyncIterable<string> | undefined): AsyncGenerator<Uint8Array> {
  for (const key of keys) {
    const stored = await objects.get(key);
    if (!stored) throw new Error(`the segment ${key} of a batch is missing from the object store`);
    const reader = stored.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield value;
    }
  }
  if (extra) { for await (const line of extra) yield encoder.encode(line + "\n"); }
}

/** The output of each line that never ended, in line order (read back from the batch's chunks). */
async function* unfinishedLines(batch: BatchRecord, ending: BatchEnding, deps: FinalizeDeps): AsyncGenerator<string> {
  const done = await deps.store.doneLines(batch.id);
  const code = ending === "expired" ? "batch_expired" : "batch_cancelled";
  const message = ending === "expired"
    ? "the request did not run before the batch's completion window ended"
    : "the batch was cancelled before the request ran";
  for (let chunk = 0; chunk < batch.chunks.length; chunk++) {
    const lines = (await readChunk(deps.objects, batch.id, chunk)) ?? [];
    for (let i = 0; i < lines.length; i++) {
      if (done[String(batch.chunks[chunk] + i)] !== undefined) continue;
      deps.unfinished(lines[i].model, ending === "expired" ? "expired" : "cancelled");
      yield unansweredLine(batch.api, `batch_req_${deps.newRequestId().replace(/-/g, "")}`, lines[i].custom_id, { code, message }).json;
    }
  }
}

/** A byte generator as a stream that reads it only as fast as it is consumed. */
function streamOf(source: AsyncGenerator<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await source.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel() {
      await source.return(undefined);
    },
  });
}
