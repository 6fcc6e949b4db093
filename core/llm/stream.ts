/**
 * A backend stream to the client: through a translator (bytes -> parsed events (once) ->
 * translated events -> SSE bytes) or passed on byte for byte, one backend chunk at a time so
 * every chunk is flushed to the client as soon as it is ready, and the backend is only read as
 * fast as the client reads (backpressure).
 *
 * Every stream ends honestly. Nothing here can crash the gateway, and a stream that does not
 * end as its protocol says (the provider's `streamProgress` tells), breaks off, or falls silent
 * for longer than the idle limit, ends the client's stream with one error event in the
 * chat-completions shape (`data: {"error":{"message","type"}}`, which the usual clients
 * surface as an API error) instead of an end the client cannot tell from a complete answer.
 * Whatever the end, `onEnd` hears once how the stream ended and the usage it reported.
 */
import type { ErrorCode } from "../errors.ts";
import type { OutEvent, StreamErrorFields, StreamEvent } from "./events.ts";
import { StreamRefused } from "./hooks.ts";
import { NdjsonParser } from "./ndjson.ts";
import type { StreamParser, Translator } from "./provider.ts";
import { formatSse, SseParser } from "./sse.ts";
import { utf8 } from "./utf8-blocks.ts";
import { SseByteScan } from "./sse-scan.ts";
import type { TokenUsage } from "./usage.ts";
import { BackendTimeoutError } from "../proxy/backend-call.ts";
import { type ChunkReader, chunkReader } from "../proxy/body-chunks.ts";
import type { PullSource } from "../proxy/own-body-response.ts";
import { bodyEnded, type EndHook } from "../pipeline/end-hook.ts";

interface EventParser {
  push(text: string): StreamEvent[];
  end(): StreamEvent[];
}

/** Why a stream did not end as its protocol says: no end event, silence, a broken connection. */
export type IncompleteReason = "no_end" | "idle" | "reset";

/** How a stream ended, told once (before the client's stream closes). */
export interface StreamOutcome {
  /** Set when the backend's stream was not complete. */
  incomplete?: IncompleteReason;
  /** The client went away first. */
  cancelled?: boolean;
  /** An output hook refused the rest of the answer (core/llm/hooks.ts `StreamRefused`): it ended with an error event. */
  refused?: boolean;
  /** The usage the stream reported; undefined when it reported none (or the provider cannot tell). */
  usage: TokenUsage | undefined;
}

export interface StreamTranslation {
  format: "sse" | "ndjson";
  /** Parses the stream from its bytes instead of `format`'s text framing (the provider's `createStreamParser`). */
  parser?: StreamParser;
  translator: Pick<Translator, "translateStreamEvent" | "translateStreamEnd" | "observeStreamEvent" | "observedEventsMayMatter" | "streamProgress">;
  /** Told about a translator error or a broken backend stream (for the log). */
  onError(reason: string, error: unknown): void;
  /** Silence after the first event that ends the stream (reason `idle`); 0 or absent = no limit. */
  idleTimeoutMs?: number;
  onEnd?(outcome: StreamOutcome): void;
  /**
   * The error event (or events) the client's protocol raises (default: the chat-completions one,
   * `errorEvent`); `error` gives its type and code when they are not the broken stream's (a refusal).
   */
  errorEvent?(message: string, error?: StreamErrorFields): OutEvent | OutEvent[];
  /**
   * Work to wait for before the next backend read, and before the stream's end is translated
   * (`ending`): an output hook's check of what it holds back (core/llm/hooks.ts `ChatStreamFilter.settle`).
   */
  settle?(ending: boolean): Promise<void> | undefined;
  /** Told once, as the first bytes go to the client (time to first token, without a stream of its own). */
  onFirstBytes?(): void;
  /** Told every chunk as it goes to the client (the response cache's recording of a stream). */
  onBytes?(bytes: Uint8Array): void;
  /**
   * The request's end steps, when the pipeline hands them over (core/pipeline/end-hook.ts):
   * awaited after `onEnd` and before the client's stream closes; run, not awaited, when the
   * client leaves the stream.
   */
  endHook?: EndHook;
}

/** The gateway's own event ending a stream it cannot finish (the 200 is already sent). */
export function errorEvent(message: string, error?: StreamErrorFields): OutEvent {
  return { data: { error: { message, type: error?.type ?? "backend_error", code: error?.code ?? ("stream_interrupted" satisfies ErrorCode) } } };
}

/** A backend stream whose first bytes have arrived (see `openStream`). */
export interface OpenedStream {
  reader: ChunkReader;
  first: Uint8Array;
}

/**
 * Waits for a backend stream's first bytes, within `timeoutMs` (0 = no limit). Throws when
 * the stream breaks off, ends or stays silent before them: nothing has gone to the client
 * yet, so the caller can try the next backend as for any failed call.
 */
export async function openStream(source: ReadableStream<Uint8Array> | ChunkReader, timeoutMs: number): Promise<OpenedStream> {
  const reader = source instanceof ReadableStream ? chunkReader(source) : source;
  const failed = (message: string) => {
    void reader.cancel().catch(() => {});
    return new Error(message);
  };
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array> | "idle";
    try {
      chunk = await readWithin(reader, timeoutMs);
    } catch (error) {
      throw failed(`the backend stream broke off before its first event: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (chunk === "idle") {
      void reader.cancel().catch(() => {});
      throw new BackendTimeoutError(`no stream event within ${timeoutMs} ms of the response headers (server.backend_timeout)`);
    }
    if (chunk.done) throw failed("the backend stream ended before its first event");
    if (chunk.value.byteLength > 0) return { reader, first: chunk.value };
  }
}

/** The next chunk, or "idle" when none came within `ms` (0 = wait as long as it takes). */
function readWithin(reader: ChunkReader, ms: number): Promise<ReadableStreamReadResult<Uint8Array> | "idle"> {
  if (!(ms > 0)) return reader.read();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<"idle">((resolve) => {
    timer = setTimeout(() => resolve("idle"), ms);
  });
  return Promise.race([reader.read(), idle]).finally(() => clearTimeout(timer));
}

/**
 * The idle limit on a stream's reads (`llm.stream_idle_timeout`) with one timer for the
 * stream's life rather than one per read (per chunk that was a timer, a race and three
 * promises). When the timer fires it looks at the read in progress: silent for `ms`, the
 * reader is cancelled (which ends the pending read) and the read says "idle"; else it waits
 * for the rest. Only the wait for a read counts: a client reading slowly is not silence.
 */
class IdleWatch {
  private idle = false;
  /** When the read in progress started (ms); -1: none. */
  private readingSince = -1;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly reader: ChunkReader,
    private readonly ms: number,
  ) {}

  async read(): Promise<ReadableStreamReadResult<Uint8Array> | "idle"> {
    this.readingSince = Date.now();
    this.timer ??= setTimeout(this.check, this.ms);
    try {
      const chunk = await this.reader.read();
      return this.idle ? "idle" : chunk;
    } catch (error) {
      if (this.idle) return "idle";
      throw error;
    } finally {
      this.readingSince = -1;
    }
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly check = () => {
    this.timer = undefined;
    // No read waiting: the next one arms the timer again.
    if (this.readingSince < 0) return;
    const silent = Date.now() - this.readingSince;
    if (silent < this.ms) {
      this.timer = setTimeout(this.check, this.ms - silent);
      return;
    }
    this.idle = true;
    void this.reader.cancel().catch(() => {});
  };
}

const opened = (source: ReadableStream<Uint8Array> | OpenedStream): OpenedStream | { reader: ChunkReader; first: undefined } =>
  source instanceof ReadableStream ? { reader: chunkReader(source), first: undefined } : source;

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

const NO_END_MESSAGE = "the backend stream ended before the end of the answer: the answer is incomplete";

/**
 * Pipes a backend stream to the client: translated (`translate`), else byte for byte with the
 * events parsed only when the provider watches them (`observeStreamEvent`). Returns the client
 * stream's source (what `new ReadableStream` takes, or an own-body Response, whose chunks a
 * server adapter may pull without building the stream: core/proxy/own-body-response.ts).
 */
function pipe(source: ReadableStream<Uint8Array> | OpenedStream, options: StreamTranslation, translate: boolean): PullSource {
  let { reader, first } = opened(source);
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const { translator } = options;
  const watches = translate || translator.observeStreamEvent !== undefined;
  const parser: EventParser | undefined = watches && !options.parser ? (options.format === "ndjson" ? new NdjsonParser() : new SseParser()) : undefined;
  const byteParser = watches ? options.parser : undefined;
  // Passed on as it is, with nothing waiting on the events' content (no output hook): only the
  // events that may change the progress are decoded and parsed (core/llm/sse-scan.ts).
  const mayMatter = translator.observedEventsMayMatter;
  const scan = !translate && parser instanceof SseParser && mayMatter && !options.settle ? new SseByteScan(parser, mayMatter) : undefined;
  const idleMs = options.idleTimeoutMs ?? 0;
  const idleWatch = idleMs > 0 ? new IdleWatch(reader, idleMs) : undefined;
  let finished = false;
  // For passed bytes: the end of what was passed on, to tell at a break whether the stream
  // stopped between events: the last chunk itself when it holds 4 bytes or more (kept, not
  // copied: per chunk that is one assignment), else the last 4 bytes as text.
  let last: Uint8Array | undefined;
  let tail = "\n\n";
  const tailText = () => (last ? String.fromCharCode(...last.subarray(last.byteLength - 4)) : tail);
  const remember = (bytes: Uint8Array) => {
    if (bytes.byteLength >= 4) {
      last = bytes;
    } else if (bytes.byteLength > 0) {
      tail = (tailText() + String.fromCharCode(...bytes)).slice(-4);
      last = undefined;
    }
  };

  const encode = (events: OutEvent[]) => utf8(events.map(formatSse).join(""));
  let firstSent = false;
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array) => {
    if (!firstSent && bytes.byteLength > 0) {
      firstSent = true;
      options.onFirstBytes?.();
    }
    options.onBytes?.(bytes);
    controller.enqueue(bytes);
  };
  const progress = () => translator.streamProgress?.();
  const { endHook } = options;
  const end = (controller: ReadableStreamDefaultController<Uint8Array>, outcome: Omit<StreamOutcome, "usage">): Promise<void> | undefined => {
    finished = true;
    idleWatch?.stop();
    options.onEnd?.({ ...outcome, usage: progress()?.usage });
    const steps = bodyEnded(endHook);
    if (!steps) {
      controller.close();
      return undefined;
    }
    const close = () => {
      try {
        controller.close();
      } catch {
        // The client left while the steps ran: its stream is already cancelled.
      }
    };
    return steps.then(close, close);
  };

  /** Ends the client's stream with one error event after what is already owed to it. */
  const fail = (
    controller: ReadableStreamDefaultController<Uint8Array>,
    owed: OutEvent[],
    reason: IncompleteReason | undefined,
    message: string,
    error?: unknown,
  ): Promise<void> | undefined => {
    if (error !== undefined) options.onError(message, error);
    const text = error !== undefined ? `${message}: ${describe(error)}` : message;
    // Passed bytes may have stopped inside an event: a blank line first ends it.
    const end = tailText();
    const separator = translate || end.endsWith("\n\n") || end.endsWith("\r\n\r\n") ? "" : "\n\n";
    send(controller, encoder.encode(separator + [...owed, ...[(options.errorEvent ?? errorEvent)(text)].flat()].map(formatSse).join("")));
    void reader.cancel().catch(() => {});
    return endWith(controller, reason);
  };
  const endWith = (controller: ReadableStreamDefaultController<Uint8Array>, reason: IncompleteReason | undefined) =>
    end(controller, reason ? { incomplete: reason } : {});
  /** An output hook refused the rest: what is owed, then the protocol's error event with the refusal's type and code. */
  const refuse = (controller: ReadableStreamDefaultController<Uint8Array>, owed: OutEvent[], refusal: StreamRefused): Promise<void> | undefined => {
    const { type, code } = refusal;
    send(controller, encoder.encode([...owed, ...[(options.errorEvent ?? errorEvent)(refusal.message, { type, code })].flat()].map(formatSse).join("")));
    void reader.cancel().catch(() => {});
    return end(controller, { refused: true });
  };
  /** Waits for the output hooks' pending work; a refusal or a failure ends the stream (undefined: go on). */
  const settled = async (controller: ReadableStreamDefaultController<Uint8Array>, owed: OutEvent[], pending: Promise<void>): Promise<"ended" | undefined> => {
    try {
      await pending;
      return undefined;
    } catch (error) {
      await (error instanceof StreamRefused ? refuse(controller, owed, error) : fail(controller, owed, undefined, "stream translation failed", error));
      return "ended";
    }
  };

  return {
    async pull(controller) {
      // Keep reading until this pull has something to send, so the client never waits on an
      // empty chunk, and never more than that, so a slow client slows the backend read.
      while (!finished) {
        // Awaited only when there is something to wait for (per chunk, an await of nothing is a turn of the microtask queue).
        const pending = options.settle?.(false);
        if (pending && (await settled(controller, [], pending))) return;
        let chunk: ReadableStreamReadResult<Uint8Array> | "idle";
        if (first) {
          chunk = { done: false, value: first };
          first = undefined;
        } else {
          try {
            chunk = await (idleWatch ? idleWatch.read() : reader.read());
          } catch (error) {
            // A break after the protocol's end loses nothing.
            if (progress()?.ended) return endWith(controller, undefined);
            return fail(controller, [], "reset", "the backend stream broke off", error);
          }
        }
        if (chunk === "idle") {
          options.onError("the backend stream fell silent", new Error(`no event for ${idleMs} ms (llm.stream_idle_timeout)`));
          return fail(controller, [], "idle", `the backend stream fell silent for ${idleMs} ms (llm.stream_idle_timeout): the answer is incomplete`);
        }
        let events: StreamEvent[] = [];
        const out: OutEvent[] = [];
        if (scan) {
          events = chunk.done ? scan.end() : scan.push(chunk.value);
        } else if (parser) {
          const text = chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
          events = chunk.done ? [...parser.push(text), ...parser.end()] : parser.push(text);
        } else if (byteParser) {
          try {
            events = chunk.done ? byteParser.end() : byteParser.push(chunk.value);
          } catch (error) {
            return fail(controller, out, chunk.done ? "no_end" : undefined, "the backend stream could not be read", error);
          }
        }
        try {
          if (translate) {
            for (const event of events) out.push(...(translator.translateStreamEvent?.(event) ?? [{ data: event.data }]));
          } else {
            for (const event of events) translator.observeStreamEvent?.(event);
          }
        } catch (error) {
          if (error instanceof StreamRefused) return refuse(controller, out, error);
          return fail(controller, out, undefined, "stream translation failed", error);
        }
        if (chunk.done) {
          const state = progress();
          if (state && !state.ended) return fail(controller, out, "no_end", NO_END_MESSAGE);
          const ending = options.settle?.(true);
          if (ending && (await settled(controller, out, ending))) return;
          if (translate) {
            try {
              out.push(...(translator.translateStreamEnd?.() ?? []));
            } catch (error) {
              if (error instanceof StreamRefused) return refuse(controller, out, error);
              return fail(controller, out, undefined, "stream translation failed", error);
            }
          }
          if (out.length > 0) send(controller, encode(out));
          return endWith(controller, undefined);
        }
        if (!translate) {
          const bytes = chunk.value;
          remember(bytes);
          if (bytes.byteLength > 0) {
            send(controller, bytes);
            return;
          }
          continue;
        }
        if (out.length > 0) {
          send(controller, encode(out));
          return;
        }
      }
    },
    async cancel(reason) {
      if (!finished) {
        finished = true;
        idleWatch?.stop();
        options.onEnd?.({ cancelled: true, usage: progress()?.usage });
        void bodyEnded(endHook);
      }
      await reader.cancel(reason).catch(() => {});
    },
  };
}

/** A backend stream through its provider's translator (see the file comment), as a stream source. */
export function translateSource(source: ReadableStream<Uint8Array> | OpenedStream, options: StreamTranslation): PullSource {
  return pipe(source, options, true);
}

/** `translateSource` as a web stream. */
export function translateStream(source: ReadableStream<Uint8Array> | OpenedStream, options: StreamTranslation): ReadableStream<Uint8Array> {
  return new ReadableStream(translateSource(source, options));
}

/**
 * A backend's own event stream passed on byte for byte (no translation), its events watched
 * when the provider follows them (`observeStreamEvent`). If the backend breaks off mid-stream,
 * the client's stream still ends cleanly, with the same one error event a translated stream
 * gets (after a blank line when the break cut an event in two).
 */
export function passSource(
  source: ReadableStream<Uint8Array> | OpenedStream,
  onError: (reason: string, error: unknown) => void,
  options: Partial<Omit<StreamTranslation, "onError">> = {},
): PullSource {
  return pipe(source, { format: "sse", translator: {}, ...options, onError }, false);
}

/** `passSource` as a web stream. */
export function passStream(
  source: ReadableStream<Uint8Array> | OpenedStream,
  onError: (reason: string, error: unknown) => void,
  options: Partial<Omit<StreamTranslation, "onError">> = {},
): ReadableStream<Uint8Array> {
  return new ReadableStream(passSource(source, onError, options));
}
