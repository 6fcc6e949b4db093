/** Stream events as the gateway hands them to translators and takes them back. */

/** One event of a backend stream, parsed once by the gateway. */
export interface StreamEvent {
  /** The SSE `event:` field (absent for unnamed events and for NDJSON lines). */
  event?: string;
  /** The SSE `data:` lines joined with "\n", or one NDJSON line. */
  data: string;
  /** `data` parsed as JSON; `undefined` when it is not JSON (e.g. `[DONE]`). */
  json: unknown;
}

/** An event to send to the client as SSE: a string `data` is sent as is, anything else as JSON. */
export interface OutEvent {
  event?: string;
  data: unknown;
}

/** The type and code of an error event that ends a stream for another reason than a broken backend stream (a refusal). */
export interface StreamErrorFields {
  type: string;
  code: string;
}
