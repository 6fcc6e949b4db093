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

export function errorEvent(message: string): OutEvent {
  return { data: { error: { message, type: "backend_error" } } };
}

export function translateStream(source: ReadableStream<Uint8Array>, options: StreamTranslation): ReadableStream<Uint8Array> {
  const reader = source.getReader();
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
  const reader = source.getReader();
  const encoder = new TextEncoder();
  let tail = "\n\n";
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        onError("the backend stream broke off", error);
        const separator = tail.endsWith("\n\n") || tail.endsWith("\r\n\r\n") ? "" : "\n\n";
        const message = `the backend stream broke off: ${error instanceof Error ? error.message : String(error)}`;
        controller.enqueue(encoder.encode(separator + formatSse(errorEvent(message))));
        controller.close();
        void reader.cancel().catch(() => {});
        return;
      }
      if (chunk.done) return controller.close();
      if (chunk.value.byteLength > 0) {
        const last = chunk.value.subarray(Math.max(0, chunk.value.byteLength - 4));
        tail = (tail + String.fromCharCode(...last)).slice(-4);
        controller.enqueue(chunk.value);
      }
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
    },
  });
}
