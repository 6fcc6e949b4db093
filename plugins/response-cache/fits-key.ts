/**
 * Whether an answer belongs under a key: a streamed request's key holds an event stream, a
 * plain request's key anything but one. A backend that streams when it was not asked to (a
 * lenient parser, a proxy in front of it) must not leave events in the cache for the next
 * plain request's client, nor a plain body where a streaming client expects events.
 */
import type { CachedAnswer } from "../../core/llm/cache.ts";

/** The media types a streamed answer comes in: server-sent events, or a local runtime's NDJSON. */
const STREAM_MEDIA_TYPES = new Set(["text/event-stream", "application/x-ndjson"]);

export function isStreamMediaType(contentType: string): boolean {
  return STREAM_MEDIA_TYPES.has(contentType.split(";")[0].trim().toLowerCase());
}

export function fitsKey(answer: CachedAnswer, stream: boolean): boolean {
  return isStreamMediaType(answer.contentType) === stream;
}
