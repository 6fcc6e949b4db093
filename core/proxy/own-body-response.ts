/**
 * A `Response` whose body the gateway holds in its own form until it is read: a Node socket
 * (adapters/node/incoming-response.ts) or the source of a stream the gateway writes
 * (`SourcedResponse`: the LLM streams of core/llm/stream.ts). `body` builds the web stream on
 * first access; reading the body whole collects it without one; and a server adapter that
 * writes chunks itself takes them with `BODY_CHUNKS` (Node's, adapters/node/own-body.ts), so
 * that no web stream is built at all: on Node 20 one costs 15-30 µs to build and a chain of
 * promises per chunk read through it (docs/design.md#streaming).
 *
 * A server that reads a Response's inner body rather than its `body` property (`Deno.serve`)
 * must not be handed one: the gateway makes a stream one only for a request whose adapter
 * said it writes them (`RequestContext.ownBodies`, see `sourcedResponse`).
 */
import { concatBytes } from "../request-body/read-bytes.ts";
import { BODY_CHUNKS, type ChunkReader } from "./body-chunks.ts";

const decoder = new TextDecoder();

async function readAll(reader: ChunkReader): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    chunks.push(chunk.value);
    total += chunk.value.byteLength;
  }
  return concatBytes(chunks, total);
}

/** A stream source reading `reader` (a web stream over chunks read elsewhere). */
const pullingFrom = (reader: ChunkReader): PullSource => ({
  async pull(controller) {
    const chunk = await reader.read();
    if (chunk.done) controller.close();
    else controller.enqueue(chunk.value);
  },
  cancel: (reason) => reader.cancel(reason),
});

export abstract class OwnBodyResponse extends Response {
  readonly #hasBody: boolean;
  #stream: ReadableStream<Uint8Array> | undefined;
  #consumed = false;

  constructor(hasBody: boolean, init: ResponseInit) {
    super(null, init);
    this.#hasBody = hasBody;
  }

  /** Whether it has a body at all (without building its web stream, as `body` would). */
  get hasBody(): boolean {
    return this.#hasBody;
  }

  /** The body as a web stream (asked for once): by default one over its chunks. */
  protected openStream(): ReadableStream<Uint8Array> {
    return new ReadableStream(pullingFrom(this.openChunks()));
  }
  /** The body's chunks (asked for once, instead of `openStream`). */
  protected abstract openChunks(): ChunkReader;
  /** The whole body, when no web stream was built. */
  protected collect(): Promise<Uint8Array<ArrayBuffer>> {
    return readAll(this.openChunks());
  }

  override get body(): ReadableStream<Uint8Array<ArrayBuffer>> | null {
    if (!this.#hasBody) return null;
    this.#stream ??= this.openStream();
    return this.#stream as ReadableStream<Uint8Array<ArrayBuffer>>;
  }

  /** The body's chunks without a web stream, once; undefined when it was read or has none (core/proxy/body-chunks.ts). */
  [BODY_CHUNKS](): ChunkReader | undefined {
    if (!this.#hasBody || this.bodyUsed || this.#stream) return undefined;
    this.#consumed = true;
    return this.openChunks();
  }

  override get bodyUsed(): boolean {
    return this.#consumed || (this.#stream?.locked ?? false);
  }

  async #bytes(): Promise<Uint8Array<ArrayBuffer>> {
    if (this.bodyUsed) throw new TypeError("Body is unusable: it has already been read");
    this.#consumed = true;
    if (!this.#hasBody) return new Uint8Array(0);
    if (this.#stream) return new Uint8Array(await new Response(this.#stream).arrayBuffer());
    return await this.collect();
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.#bytes()).buffer;
  }

  override async text(): Promise<string> {
    return decoder.decode(await this.#bytes());
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  override async blob(): Promise<Blob> {
    return new Blob([await this.#bytes()], { type: this.headers.get("content-type") ?? "" });
  }

  override async formData(): Promise<FormData> {
    return await new Response(await this.#bytes(), { headers: this.headers }).formData();
  }

  override clone(): Response {
    if (this.bodyUsed) throw new TypeError("Response.clone: the body has already been read");
    const init = { status: this.status, statusText: this.statusText, headers: this.headers };
    const body = this.body;
    if (!body) return new Response(null, init);
    const [mine, theirs] = body.tee();
    this.#stream = mine;
    return new Response(theirs, init);
  }
}

/** A web stream's source that makes its chunks when pulled (no `start`). */
export interface PullSource {
  pull(controller: ReadableStreamDefaultController<Uint8Array>): void | PromiseLike<void>;
  cancel?(reason?: unknown): void | PromiseLike<void>;
}

/**
 * The chunks a stream source (what `new ReadableStream(source)` takes) enqueues, read by calling
 * its `pull` as a web stream would (one at a time, while nothing is queued), without the stream.
 * Its controller acts as a web stream's: once closed or cancelled, `enqueue` and `close` throw.
 */
function sourceChunks(source: PullSource): ChunkReader {
  const queue: Uint8Array[] = [];
  let closed = false;
  let errored = false;
  let failure: unknown;
  const refuse = () => {
    if (closed || errored) throw new TypeError("Invalid state: the stream is closed");
  };
  const controller = {
    desiredSize: 1,
    enqueue(chunk: Uint8Array) {
      refuse();
      queue.push(chunk);
    },
    close() {
      refuse();
      closed = true;
    },
    error(reason: unknown) {
      if (closed || errored) return;
      errored = true;
      failure = reason;
    },
  } as ReadableStreamDefaultController<Uint8Array>;
  return {
    async read() {
      while (queue.length === 0 && !closed && !errored) {
        try {
          await source.pull(controller);
        } catch (error) {
          // As a web stream: a pull that fails errors the stream, unless it was closed or cancelled.
          if (!closed && !errored) {
            errored = true;
            failure = error;
          }
        }
      }
      const chunk = queue.shift();
      if (chunk) return { done: false, value: chunk };
      if (errored) throw failure;
      return { done: true, value: undefined };
    },
    async cancel(reason) {
      if (closed || errored) return;
      closed = true;
      queue.length = 0;
      await source.cancel?.(reason);
    },
  };
}

/** A Response whose body is a stream source the gateway pulls (core/llm/stream.ts). */
export class SourcedResponse extends OwnBodyResponse {
  readonly #source: PullSource;

  constructor(source: PullSource, init: ResponseInit) {
    super(true, init);
    this.#source = source;
  }

  protected override openStream(): ReadableStream<Uint8Array> {
    return new ReadableStream(this.#source);
  }

  protected openChunks(): ChunkReader {
    return sourceChunks(this.#source);
  }
}

/** A Response whose body is chunks read from elsewhere: a backend's answer relayed as it comes (plugins/sync-proxy). */
export class ChunksResponse extends OwnBodyResponse {
  readonly #reader: ChunkReader;

  constructor(reader: ChunkReader, init: ResponseInit) {
    super(true, init);
    this.#reader = reader;
  }

  protected openChunks(): ChunkReader {
    return this.#reader;
  }
}

/**
 * A Response of the stream `source`: an own-body one when the server adapter writes its chunks
 * itself (`RequestContext.ownBodies`), else one with its web stream.
 */
export function sourcedResponse(source: PullSource, init: ResponseInit, ownBodies: boolean): Response {
  return ownBodies ? new SourcedResponse(source, init) : new Response(new ReadableStream(source), init);
}
