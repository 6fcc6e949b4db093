/**
 * ConverseStream's body (`application/vnd.amazon.eventstream`) -> `StreamEvent`s, as bytes
 * arrive. Each frame starts with its total length (4 bytes, big-endian); this file only cuts
 * the byte stream at those lengths, and the AWS event-stream codec checks each frame's CRCs and
 * reads its headers and payload.
 *
 * | frame (`:message-type`)          | StreamEvent                                                          |
 * |----------------------------------|----------------------------------------------------------------------|
 * | `event`                          | `event`: the `:event-type` header (`messageStart`, `contentBlockDelta`, ...), `data`: the JSON payload |
 * | `exception`                      | `event: "error"`, `data`: `{"type": <:exception-type>, "message": ...}` |
 * | `error` (unmodelled)             | `event: "error"`, `data`: `{"type": <:error-code>, "message": <:error-message>}` |
 *
 * A frame whose checksum or length is wrong cannot be skipped (nothing after it can be trusted):
 * the decoder throws, which ends the client's stream with an error event.
 */
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { isRecord, parseJson, type StreamEvent } from "../../core/llm/provider.ts";

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();
const codec = new EventStreamCodec(
  (bytes) => utf8Decoder.decode(bytes),
  (text) => utf8Encoder.encode(text),
);

/** The prelude's first field, the frame's total length in bytes. */
const LENGTH_BYTES = 4;
/** Prelude (8) + prelude CRC (4) + message CRC (4): the smallest frame there is. */
const MINIMUM_FRAME_BYTES = 16;
/** The format's limits (16 MiB of payload, 128 KiB of headers): a larger length is a corrupt prelude, not a frame to wait for. */
const MAXIMUM_FRAME_BYTES = 16 * 1024 * 1024 + 128 * 1024 + MINIMUM_FRAME_BYTES;

type FrameHeaders = ReturnType<EventStreamCodec["decode"]>["headers"];

function header(headers: FrameHeaders, name: string): string | undefined {
  const value = headers[name]?.value;
  return typeof value === "string" ? value : undefined;
}

function errorEvent(type: string, message: string): StreamEvent {
  const json = { type, message };
  return { event: "error", data: JSON.stringify(json), json };
}

/** One decoded frame as the event translators see. */
function toEvent(frame: Uint8Array): StreamEvent {
  const { headers, body } = codec.decode(frame);
  const text = utf8Decoder.decode(body);
  const kind = header(headers, ":message-type") ?? "event";
  if (kind === "exception") {
    const json = parseJson(text);
    const message = isRecord(json) && typeof json.message === "string" ? json.message : text;
    return errorEvent(header(headers, ":exception-type") ?? "exception", message);
  }
  if (kind === "error") return errorEvent(header(headers, ":error-code") ?? "error", header(headers, ":error-message") ?? text);
  const name = header(headers, ":event-type");
  return { ...(name !== undefined ? { event: name } : {}), data: text, json: parseJson(text) };
}

export class EventStreamDecoder {
  private pending: Uint8Array = new Uint8Array(0);

  /** Feeds the next bytes of the body; returns the events of the frames they completed. */
  push(bytes: Uint8Array): StreamEvent[] {
    if (bytes.byteLength === 0) return [];
    this.pending = this.pending.byteLength === 0 ? bytes : concat(this.pending, bytes);
    const events: StreamEvent[] = [];
    let offset = 0;
    while (this.pending.byteLength - offset >= LENGTH_BYTES) {
      const view = new DataView(this.pending.buffer, this.pending.byteOffset + offset, LENGTH_BYTES);
      const length = view.getUint32(0, false);
      if (length < MINIMUM_FRAME_BYTES || length > MAXIMUM_FRAME_BYTES) {
        throw new Error(`the backend sent an event-stream frame of ${length} bytes (a frame has ${MINIMUM_FRAME_BYTES} to ${MAXIMUM_FRAME_BYTES})`);
      }
      if (this.pending.byteLength - offset < length) break;
      events.push(toEvent(this.pending.subarray(offset, offset + length)));
      offset += length;
    }
    // Kept as a copy: the chunk it came in belongs to the caller.
    this.pending = this.pending.slice(offset);
    return events;
  }

  /** The body ended: bytes of a frame still incomplete mean the stream was cut inside it. */
  end(): StreamEvent[] {
    const left = this.pending.byteLength;
    this.pending = new Uint8Array(0);
    if (left > 0) throw new Error(`the backend stream ended inside an event-stream frame (${left} bytes of it arrived)`);
    return [];
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}
