/**
 * Streams a multipart upload (a job submission, a batch input file) without holding the file: busboy
 * parses chunks read from the Web `ReadableStream`, text fields are collected, and the
 * `file` part is handed over as a Web stream the moment it starts, so it can flow straight
 * into the object store. Backpressure runs end to end: a slow store pauses the file part,
 * which stalls the parser, which stops reading the request.
 *
 * Fields may come before or after the file; the file handler sees the fields read so far.
 */
import busboy from "busboy";
import { errors } from "../errors.ts";
import { discardRest } from "./read-bytes.ts";

/** Fields are small (model, operation, callback_url, purpose); the file is the only big part. */
const LIMITS = { fields: 32, fieldSize: 64 * 1024, fieldNameSize: 200, files: 8, parts: 64, headerPairs: 100 } as const;

/** The `boundary` parameter of a multipart content type as sent (quotes removed), or undefined without one. */
function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType);
  return match ? (match[1] ?? match[2]) : undefined;
}

export interface FilePart {
  /** The part's file name ("" when the client sent none). */
  filename: string;
  mimeType: string;
  /** Must be read to the end or cancelled. */
  stream: ReadableStream<Uint8Array>;
}

/** Called once when the `file` part starts. A rejection ends the parse with that error. */
export type FileHandler = (part: FilePart, fieldsSoFar: ReadonlyMap<string, string>) => Promise<void>;

export interface FormResult {
  fields: Map<string, string>;
  /** True when a `file` part was read (and handled). */
  hadFile: boolean;
}

type BusboyFileStream = Parameters<busboy.BusboyEvents["file"]>[1];

/**
 * busboy's file part (a Node Readable) as a Web stream that pauses it while the reader is
 * behind. `abort` errors the Web stream, so a consumer waiting on it stops when the parse fails.
 */
function toWebStream(source: BusboyFileStream): { stream: ReadableStream<Uint8Array>; abort(reason: unknown): void } {
  let ended = false;
  let control!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        control = controller;
        source.on("data", (chunk: Uint8Array) => {
          if (ended) return;
          controller.enqueue(chunk);
          if ((controller.desiredSize ?? 0) <= 0) source.pause();
        });
        source.once("end", () => {
          if (ended) return;
          ended = true;
          controller.close();
        });
        source.once("error", (error: Error) => {
          if (ended) return;
          ended = true;
          controller.error(error);
        });
      },
      pull() {
        source.resume();
      },
      cancel() {
        ended = true;
        // Drain the rest so the parser is not stuck behind a part nobody reads.
        source.resume();
      },
    },
    { highWaterMark: 8 },
  );
  return {
    stream,
    abort(reason) {
      if (ended) return;
      ended = true;
      control.error(reason);
      source.resume();
    },
  };
}

/** How much of a refused upload is still read and dropped after its error answer (see `discardRest`). */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

/** A promise that settles only through `resolve`. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Waits for one step or for a failure, whichever comes first. Each wait races against a
 * fresh promise: racing every chunk's read against one long-lived promise would leave a
 * reaction on it per read, each holding that read's chunk, so an upload would stay in
 * memory whole until the request ended.
 */
class Interruptible {
  private wake: (() => void) | undefined;
  private interrupted = false;

  interrupt(): void {
    this.interrupted = true;
    this.wake?.();
  }

  /** The step's value, or undefined once interrupted. */
  async wait<T>(step: Promise<T>): Promise<T | undefined> {
    if (this.interrupted) return undefined;
    const woken = new Promise<undefined>((resolve) => (this.wake = () => resolve(undefined)));
    try {
      return await Promise.race([step, woken]);
    } finally {
      this.wake = undefined;
    }
  }
}

/**
 * What a form's reader expects. `singleValued`: the fields the gateway reads, each of which
 * must come once: with two `model` fields, a reader keeping the first and one keeping the last
 * would pick different models. Fields the gateway does not read may repeat (OpenAI's
 * `timestamp_granularities[]` does). `what`: the upload, as the 400 for a body that is not
 * multipart names it ("the job").
 */
export interface FormRules {
  singleValued: ReadonlySet<string>;
  what: string;
}

export async function readMultipartForm(request: Request, onFile: FileHandler, rules: FormRules): Promise<FormResult> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!/^multipart\/form-data\b/i.test(contentType.trim())) {
    throw errors.badRequest(`send ${rules.what} as multipart/form-data with a "file" part (got content-type "${contentType || "none"}")`);
  }
  // A parser takes an empty boundary and then finds parts where the client meant none.
  if (boundaryOf(contentType) === "") {
    throw errors.badRequest(
      `the multipart boundary is empty (boundary=""); give the boundary that separates the body's parts (1 to 70 characters), or let the HTTP client set the content type`,
    );
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { "content-type": contentType }, limits: LIMITS });
  } catch (error) {
    throw errors.badRequest(`malformed multipart content-type: ${(error as Error).message}`);
  }
  const body = request.body;
  if (!body) throw errors.badRequest('the request has no body; send a multipart form with a "file" part');

  const fields = new Map<string, string>();
  let hadFile = false;
  let fileTask: Promise<void> | undefined;
  let abortFile: ((reason: unknown) => void) | undefined;
  let failure: { error: unknown } | undefined;
  const stop = new Interruptible();
  const fail = (error: unknown) => {
    if (failure) return;
    failure = { error };
    stop.interrupt();
  };
  const closed = signal();

  parser.on("field", (name, value, info) => {
    if (info.nameTruncated || info.valueTruncated) {
      fail(errors.badRequest(`form field "${name.slice(0, 50)}" is too long (fields are limited to ${LIMITS.fieldSize} bytes)`));
      return;
    }
    if (fields.has(name) && rules.singleValued.has(name)) {
      fail(errors.badRequest(`form field "${name}" was sent more than once; send it once`));
      return;
    }
    // A field the gateway does not read: the first value is kept, unused.
    if (!fields.has(name)) fields.set(name, value);
  });
  parser.on("file", (name, stream, info) => {
    if (name !== "file") {
      stream.resume();
      return;
    }
    if (hadFile) {
      stream.resume();
      fail(errors.badRequest('send exactly one "file" part'));
      return;
    }
    hadFile = true;
    const web = toWebStream(stream);
    abortFile = web.abort;
    const part: FilePart = { filename: info.filename ?? "", mimeType: info.mimeType, stream: web.stream };
    fileTask = onFile(part, new Map(fields)).catch((error: unknown) => {
      fail(error);
      stream.resume();
    });
  });
  parser.on("fieldsLimit", () => fail(errors.badRequest(`too many form fields (at most ${LIMITS.fields})`)));
  parser.on("filesLimit", () => fail(errors.badRequest(`too many file parts (at most ${LIMITS.files}); send one "file" part`)));
  parser.on("partsLimit", () => fail(errors.badRequest(`too many form parts (at most ${LIMITS.parts})`)));
  parser.on("error", (error: Error) => fail(errors.badRequest(`malformed multipart body: ${error.message}`)));
  parser.on("close", () => closed.resolve());

  const reader = body.getReader();
  try {
    while (!failure) {
      const next = await stop.wait(reader.read());
      if (!next || failure) break;
      if (next.done) {
        parser.end();
        break;
      }
      if (!parser.write(next.value)) {
        const drained = new Promise<void>((resolve) => parser.once("drain", resolve));
        await stop.wait(drained);
      }
    }
    // The parser closes once every part was read, the file part included.
    await stop.wait(closed.promise);
    await fileTask;
  } catch (error) {
    // The client went away mid-upload, or the body stream failed.
    fail(errors.badRequest(`the upload was interrupted: ${(error as Error).message}`));
  }
  if (failure) {
    abortFile?.(failure.error);
    parser.destroy();
    await fileTask;
    await discardRest(reader, DRAIN_MAX_BYTES);
    throw failure.error;
  }
  return { fields, hadFile };
}

/** An uploaded file's name as the gateway keeps it (and passes it on to a backend): no path, no control characters, bounded length. */
export function sanitizeFilename(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  // deno-lint-ignore no-control-regex -- control characters are exactly what is removed from a file name
  const clean = base.replace(/[\u0000-\u001f\u007f"]/g, "").trim().slice(-200);
  return clean === "" ? "upload" : clean;
}
