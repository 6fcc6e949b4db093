/** Narrowing helpers for JSON that came off the wire (no `any` past this point). */

export type JsonObject = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** JSON.parse that answers `undefined` instead of throwing (backend bodies may be anything). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Bytes a `Response` or `fetch` accepts as a body (TypeScript wants them backed by an ArrayBuffer). */
export type Bytes = Uint8Array<ArrayBuffer>;

/** The same bytes typed as a body; copied only if they sit on a SharedArrayBuffer. */
export function asBytes(bytes: Uint8Array): Bytes {
  return isArrayBacked(bytes) ? bytes : new Uint8Array(bytes);
}

function isArrayBacked(bytes: Uint8Array): bytes is Bytes {
  return bytes.buffer instanceof ArrayBuffer;
}
