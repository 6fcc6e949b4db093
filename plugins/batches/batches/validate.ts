/**
 * A batch's validation, before anything is sent: every line of the input file is read (a line
 * at a time, never the whole file) and checked (checks.ts). With a bad line the batch fails,
 * listing the first MAX_ERRORS problems with their line numbers, and no line is sent. Otherwise
 * the checked lines are in chunks (chunks.ts), the batch is running, and its lines are queued
 * on their models (a slice at a time, resumable: `enqueueRest` picks up after a crash).
 */
import type { ObjectStore } from "../../../core/stores/objects.ts";
import type { FileStore } from "../files/store.ts";
import { jsonlLines } from "../jsonl.ts";
import { type CheckedLine, checkLine, type LineRules } from "./checks.ts";
import { chunkOf, ChunkWriter, deleteBatchObjects, readChunk } from "./chunks.ts";
import type { BatchRecord, LineError } from "./record.ts";
import type { BatchStore } from "./store.ts";

/** Problems listed on a failed batch (and where reading stops). */
export const MAX_ERRORS = 100;
/** Lines queued per store operation. */
const ENQUEUE_SLICE = 1000;
/** The validation's lease on its batch is renewed every this many lines. */
const KEEP_ALIVE_LINES = 500;

export interface ValidationDeps {
  store: BatchStore;
  files: FileStore;
  objects: ObjectStore;
  maxLines: number;
  /** The longest line read (the sync body limit: a longer request would be refused anyway). */
  maxLineBytes: number;
  now(): number;
  /** Renews the validation's hold on the batch (its place on the sweep's schedule). */
  keepAlive(): Promise<void>;
}

export type Validated = { ok: true; total: number; chunks: number[]; models: string[] } | { ok: false; errors: LineError[] };

/** Reads and checks the input file, writing the checked lines in chunks; nothing is queued. */
export async function checkInput(batch: BatchRecord, rules: LineRules, deps: ValidationDeps): Promise<Validated> {
  const input = await deps.files.get(batch.input_file_id);
  const content = input ? await deps.files.content(input) : null;
  if (!content) {
    return {
      ok: false,
      errors: [{
        code: "file_not_found",
        message: `the input file "${batch.input_file_id}" was deleted before the batch started; upload it again and create a new batch`,
        line: null,
      }],
    };
  }
  const errors: LineError[] = [];
  const seen = new Set<string>();
  const models: string[] = [];
  const writer = new ChunkWriter(deps.objects, batch.id);
  let count = 0;
  for await (const { number, text } of jsonlLines(content.body, deps.maxLineBytes)) {
    if (text !== undefined && text.trim() === "") continue;
    count++;
    if (count > deps.maxLines) {
      errors.push({
        code: "too_many_lines",
        message: `the file has more than ${deps.maxLines} requests (batches.max_lines); split it into several batches`,
        line: number,
      });
      break;
    }
    if (count % KEEP_ALIVE_LINES === 0) await deps.keepAlive();
    if (text === undefined) {
      errors.push({
        code: "line_too_large",
        message: `the line is longer than ${deps.maxLineBytes} bytes, the largest request the gateway takes (server.max_body_mb)`,
        line: number,
      });
    } else {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        value = undefined;
      }
      const checked = value === undefined
        ? { error: { code: "invalid_json_line", message: "the line is not valid JSON; write one JSON request object per line (JSONL)" } }
        : checkLine(value, rules, seen);
      if ("error" in checked) errors.push({ ...checked.error, line: number });
      else if (errors.length === 0) {
        seen.add(checked.line.custom_id);
        models.push(checked.line.model);
        await writer.add(checked.line);
      } else seen.add(checked.line.custom_id);
    }
    if (errors.length >= MAX_ERRORS) break;
  }
  if (errors.length === 0 && count === 0) {
    errors.push({ code: "empty_file", message: "the input file holds no request; write one JSON request object per line", line: null });
  }
  if (errors.length > 0) {
    await deleteBatchObjects(deps.objects, batch.id);
    return { ok: false, errors };
  }
  await writer.flush();
  return { ok: true, total: count, chunks: writer.starts, models };
}

/** Queues the lines of a running batch from `batch.enqueued` on; `models` when at hand, else read back from its chunks. */
export async function enqueueRest(batch: BatchRecord, deps: ValidationDeps, models?: readonly string[]): Promise<void> {
  let from = batch.enqueued;
  while (from < batch.total) {
    const slice = models ? models.slice(from, from + ENQUEUE_SLICE) : await modelsOf(batch, from, deps.objects);
    if (slice.length === 0) throw new Error(`batch ${batch.id}: the checked lines from ${from} are missing`);
    if (!(await deps.store.enqueue(batch.id, from, slice))) return;
    from += slice.length;
    await deps.keepAlive();
  }
}

/** The models of the lines of the chunk holding `from`, from `from` on. */
async function modelsOf(batch: BatchRecord, from: number, objects: ObjectStore): Promise<string[]> {
  const chunk = chunkOf(batch.chunks, from);
  const lines: CheckedLine[] = (await readChunk(objects, batch.id, chunk)) ?? [];
  return lines.slice(from - batch.chunks[chunk]).map((line) => line.model);
}
