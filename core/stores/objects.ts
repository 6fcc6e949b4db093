/**
 * The object store contract. Implementations live in `adapters/`: files under a
 * directory, and S3 (any S3-protocol server). Bodies always stream: an object is
 * never held whole in memory.
 */

export interface ObjectInfo {
  key: string;
  size: number;
  lastModified: Date;
}

export interface StoredObject {
  body: ReadableStream<Uint8Array>;
  /** Plaintext size when known. */
  size?: number;
  contentType?: string;
}

export interface PutOptions {
  contentType?: string;
}

export interface ObjectStore {
  /** "fs" or "s3" (with "+encrypted" when wrapped), for logs and metrics. */
  readonly kind: string;
  /** Streams `body` into `key`. Resolves with the number of bytes read from `body`. A failed or aborted body leaves no object behind. */
  put(key: string, body: ReadableStream<Uint8Array> | Uint8Array, options?: PutOptions): Promise<{ size: number }>;
  /** Null when the object does not exist. */
  get(key: string): Promise<StoredObject | null>;
  /** Deleting a missing object is not an error. */
  delete(key: string): Promise<void>;
  /** Objects whose key starts with `prefix`, in pages (bounded memory). */
  list(prefix: string): AsyncIterable<ObjectInfo>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
