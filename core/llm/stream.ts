/**
 * A backend stream through a translator: bytes -> parsed events (once) -> translated events
 * -> SSE bytes, one backend chunk at a time so every chunk is flushed to the client as soon as
 * it is translated, and the backend is only read as fast as the client reads (backpressure).
 *
 * Nothing here can crash the gateway: a translator that throws, or a backend that breaks off,
 * ends the client's stream with one clean error event in the chat-completions shape
 * (`data: {"error":{"message","type"}}`), which the usual clients surface as an API error.
 */
import type { OutEvent, StreamEvent } from "./events.ts";
import { NdjsonParser } from "./ndjson.ts";
import type { Translator } from "./provider.ts";
import { formatSse, SseParser } from "./sse.ts";

interface EventParser {
  push(text: string): StreamEvent[];
  end(): StreamEvent[];
}

export interface StreamTranslation {
  format: "sse" | "ndjson";
  translator: Pick<Translator, "translateStreamEvent" | "translateStreamEnd">;
  /** Told about a translator error or a broken backend stream (for the log). */
  onError(reason: string, error: unknown): void;
}

/** The buffer a backend stream is read into when it lets the reader bring one (see `chunkReader`). */
const READ_SIZE = 4096;

interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * Whether a stream refused a BYOB reader. A refusal is a thrown TypeError, which costs more
 * than the reads it would save, so once one stream refused (Node's client makes plain
 * streams) no later one is asked; a stream read the default way is only slower, never wrong.
 */
let byobRefused = false;

/**
 * Reads a backend stream with the gateway's own 4 KiB buffers when it is a byte stream (a
 * BYOB reader: Deno's fetch bodies), else with its default reader (Node's client). Deno's
 * default reader allocates 64 KiB per chunk, however small the chunk; for a stream of small
 * SSE events that allocation was most of the CPU the gateway spent passing it on. (A byte
 * stream must answer a pending read with `byobRequest.respond(0)` when it closes, as the
 * runtimes' fetch bodies do; one built by hand that only calls `close()` would never end.)
 */
function chunkReader(source: ReadableStream<Uint8Array>): ChunkReader {
  let byob: ReadableStreamBYOBReader | undefined;
  if (!byobRefused) {
    try {
      byob = source.getReader({ mode: "byob" });
    } catch {
      byobRefused = true;
    }
  }
  if (byob) {
    const reader = byob;
    return { read: () => reader.read(new Uint8Array(READ_SIZE)), cancel: (reason) => reader.cancel(reason) };
  }
  const defaultReader = source.getReader();
  return { read: () => defaultReader.read(), cancel: (reason) => defaultReader.cancel(reason) };
}

export function errorEvent(message: string): OutEvent {
  return { data: { error: { message, type: "backend_error" } } };
}

export function translateStream(source: ReadableStream<Uint8Array>, options: StreamTranslation): ReadableStream<Uint8Array> {
  const reader = chunkReader(source);
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const parser: EventParser = options.format === "ndjson" ? new NdjsonParser() : new SseParser();
  const { translator } = options;
  let finished = false;

  const encode = (events: OutEvent[]) => encoder.encode(events.map(formatSse).join(""));

  /** Ends the client's stream: what was translated so far, then one error event. */
  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, translated: OutEvent[], reason: string, error: unknown) => {
    options.onError(reason, error);
    finished = true;
    controller.enqueue(encode([...translated, errorEvent(`${reason}: ${error instanceof Error ? error.message : String(error)}`)]));
    controller.close();
    void reader.cancel().catch(() => {});
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Keep reading until this pull has something to send, so the client never waits on an
      // empty chunk, and never more than that, so a slow client slows the backend read.
      while (!finished) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          return fail(controller, [], "the backend stream broke off", error);
        }
        const events = chunk.done ? [...parser.push(decoder.decode()), ...parser.end()] : parser.push(decoder.decode(chunk.value, { stream: true }));
        const out: OutEvent[] = [];
        try {
          for (const event of events) out.push(...(translator.translateStreamEvent?.(event) ?? [{ data: event.data }]));
          if (chunk.done) out.push(...(translator.translateStreamEnd?.() ?? []));
        } catch (error) {
          return fail(controller, out, "stream translation failed", error);
        }
        if (out.length > 0) controller.enqueue(encode(out));
        if (chunk.done) {
          finished = true;
          controller.close();
          return;
        }
        if (out.length > 0) return;
      }
    },
    async cancel(reason) {
      finished = true;
      await reader.cancel(reason).catch(() => {});
    },
  });
}

/**
 * A backend's own event stream passed on byte for byte (no translation). If the backend breaks
 * off mid-stream, the client's stream still ends cleanly, with the same one error event a
 * translated stream gets (after a blank line when the break cut an event in two), instead of
 * an end the client cannot tell from a complete answer.
 */
export function passStream(source: ReadableStream<Uint8Array>, onError: (reason: string, error: unknown) => void): ReadableStream<Uint8Array> {
  const reader = chunkReader(source);
  // The end of what was passed on, to tell at a break whether the stream stopped between
  // events: the last chunk itself when it holds 4 bytes or more (kept, not copied: per chunk
  // that is one assignment), else the last 4 bytes as text.
  let last: Uint8Array | undefined;
  let tail = "\n\n";
  const tailText = () => (last ? String.fromCharCode(...last.subarray(last.byteLength - 4)) : tail);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        onError("the backend stream broke off", error);
        const end = tailText();
        const separator = end.endsWith("\n\n") || end.endsWith("\r\n\r\n") ? "" : "\n\n";
        const message = `the backend stream broke off: ${error instanceof Error ? error.message : String(error)}`;
        controller.enqueue(new TextEncoder().encode(separator + formatSse(errorEvent(message))));
        controller.close();
        void reader.cancel().catch(() => {});
        return;
      }
      if (chunk.done) return controller.close();
      const bytes = chunk.value;
      if (bytes.byteLength >= 4) {
        last = bytes;
      } else if (bytes.byteLength > 0) {
        tail = (tailText() + String.fromCharCode(...bytes)).slice(-4);
        last = undefined;
      }
      if (bytes.byteLength > 0) controller.enqueue(bytes);
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
    },
  });
}
