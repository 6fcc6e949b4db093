/**
 * AES-256-GCM encryption at rest for any ObjectStore, in a chunked format so an
 * object of any size is encrypted and decrypted as a stream. The gateway and the
 * relay both read and write it; they must be configured with the same key.
 *
 * Stored object format, version 1 (all integers big-endian):
 *
 *   header, 33 bytes:
 *     0   4  magic "IGWE" (0x49 0x47 0x57 0x45)
 *     4   1  version = 0x01
 *     5   4  C = plaintext bytes per chunk (writers use 65536; readers accept 1..1048576)
 *     9  16  salt, random per object
 *    25   8  nonce prefix, random per object
 *   then one or more records, in order, with no separators:
 *     ciphertext of chunk i (C bytes for every chunk but the last; 0..C for the last)
 *     16-byte GCM tag
 *
 *   object key   = HKDF-SHA-256(ikm = the 32-byte configured key, salt = salt,
 *                  info = "IGWE v1 AES-256-GCM object key"), 32 bytes
 *   nonce of i   = nonce prefix (8 bytes) || i as uint32 (4 bytes); i counts from 0
 *   AAD of i     = header (33 bytes) || i as uint32 || final flag (1 byte: 0x01 for
 *                  the last record, 0x00 otherwise)
 *
 * Every object has at least one record: the empty object is the header plus one
 * final record holding only a tag. A record is the last one exactly when nothing
 * follows it, so a reader takes each C + 16 bytes as a non-final record while more
 * bytes follow, and the remainder (16..C + 16 bytes) as the final record.
 *
 * What this detects: any modified byte (header included, via the AAD and the key
 * derivation), records reordered or dropped (the index is in nonce and AAD),
 * truncation at a record boundary (the new last record was sealed as non-final),
 * appended data (the old last record was sealed as final) and the wrong key.
 * The per-object key means nonces can never repeat under one key, however many
 * objects are written. Metadata (key name, content type, approximate size) stays
 * in the clear.
 *
 * Stored size for a plaintext of P bytes: 33 + P + 16 * max(1, ceil(P / C)).
 */
import type { ObjectInfo, ObjectStore, PutOptions, StoredObject } from "./objects.ts";
import { BodySource, ByteQueue } from "./streams.ts";

const MAGIC = [0x49, 0x47, 0x57, 0x45];
const VERSION = 1;
const CHUNK_SIZE = 64 * 1024;
/** Caps what a forged header can make a reader buffer before authentication fails. */
const MAX_CHUNK_SIZE = 1024 * 1024;
const SALT_BYTES = 16;
const PREFIX_BYTES = 8;
const TAG_BYTES = 16;
const HEADER_BYTES = 4 + 1 + 4 + SALT_BYTES + PREFIX_BYTES;
const MAX_RECORDS = 2 ** 32;
const KEY_INFO = new TextEncoder().encode("IGWE v1 AES-256-GCM object key");

/** The stored bytes are not a valid encrypted object under this key: tampered, truncated, not encrypted, or the wrong key. */
export class ObjectDecryptionError extends Error {
  override name = "ObjectDecryptionError";
  constructor(key: string, reason: string) {
    super(`cannot decrypt object ${JSON.stringify(key)}: ${reason}`);
  }
}

/** Validates the configured key (64 hex characters) and returns its 32 bytes. */
export function parseEncryptionKey(hex: string): Uint8Array<ArrayBuffer> {
  const text = hex.trim();
  if (!/^[0-9a-fA-F]{64}$/.test(text)) {
    // Never echo the value: it may be a real key with a typo.
    const problem = text.length !== 64 ? `it has ${text.length} characters` : "it contains non-hex characters";
    throw new Error(
      `object store encryption key must be 64 hex characters (32 bytes), but ${problem}; generate one with \`openssl rand -hex 32\``,
    );
  }
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = Number.parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** Wraps `inner` so everything it stores is encrypted with `keyHex` (see the format above). */
export function encryptedObjects(inner: ObjectStore, keyHex: string): ObjectStore {
  const masterKey = crypto.subtle.importKey("raw", parseEncryptionKey(keyHex), "HKDF", false, ["deriveKey"]);

  return {
    kind: `${inner.kind}+encrypted`,

    async put(key: string, body: ReadableStream<Uint8Array> | Uint8Array, options?: PutOptions): Promise<{ size: number }> {
      const source = new BodySource(body);
      try {
        await inner.put(key, encryptingStream(source, await masterKey), options);
      } catch (error) {
        await source.cancel(error);
        throw error;
      }
      return { size: source.bytes };
    },

    async get(key: string): Promise<StoredObject | null> {
      const stored = await inner.get(key);
      if (!stored) return null;
      return await decrypt(key, stored, await masterKey);
    },

    delete: (key) => inner.delete(key),

    async *list(prefix: string): AsyncIterable<ObjectInfo> {
      for await (const info of inner.list(prefix)) {
        // Exact for everything this module writes; a listing must not open every object.
        yield { ...info, size: plaintextSize(info.size, CHUNK_SIZE) ?? info.size };
      }
    },

    ping: () => inner.ping(),
    close: () => inner.close(),
  };
}

/** Plaintext size of a stored object of `storedSize` bytes, or undefined when no valid object has that size. */
function plaintextSize(storedSize: number, chunkSize: number): number | undefined {
  const records = storedSize - HEADER_BYTES;
  if (records < TAG_BYTES) return undefined;
  const recordSize = chunkSize + TAG_BYTES;
  const remainder = records % recordSize;
  if (remainder !== 0 && remainder < TAG_BYTES) return undefined;
  return records - TAG_BYTES * Math.ceil(records / recordSize);
}

/** Seals and opens the records of one object. */
class RecordCipher {
  private constructor(
    private readonly key: CryptoKey,
    private readonly header: Uint8Array<ArrayBuffer>,
  ) {}

  static async forHeader(masterKey: CryptoKey, header: Uint8Array<ArrayBuffer>): Promise<RecordCipher> {
    const salt = header.slice(9, 9 + SALT_BYTES);
    const key = await crypto.subtle.deriveKey(
      { name: "HKDF", hash: "SHA-256", salt, info: KEY_INFO },
      masterKey,
      { name: "AES-GCM", length: 256 },
      false,
      ["encrypt", "decrypt"],
    );
    return new RecordCipher(key, header);
  }

  async seal(index: number, final: boolean, plaintext: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
    const sealed = await crypto.subtle.encrypt(this.params(index, final), this.key, plaintext);
    return new Uint8Array(sealed);
  }

  /** Rejects (with WebCrypto's OperationError) when the record does not authenticate. */
  async open(index: number, final: boolean, record: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
    const opened = await crypto.subtle.decrypt(this.params(index, final), this.key, record);
    return new Uint8Array(opened);
  }

  private params(index: number, final: boolean): AesGcmParams {
    if (index >= MAX_RECORDS) throw new Error("object too large for the encrypted format (2^32 chunks)");
    const iv = new Uint8Array(PREFIX_BYTES + 4);
    iv.set(this.header.subarray(9 + SALT_BYTES, HEADER_BYTES));
    new DataView(iv.buffer).setUint32(PREFIX_BYTES, index);
    const additionalData = new Uint8Array(HEADER_BYTES + 5);
    additionalData.set(this.header);
    new DataView(additionalData.buffer).setUint32(HEADER_BYTES, index);
    additionalData[HEADER_BYTES + 4] = final ? 1 : 0;
    return { name: "AES-GCM", iv, additionalData, tagLength: TAG_BYTES * 8 };
  }
}

function newHeader(): Uint8Array<ArrayBuffer> {
  const header = new Uint8Array(HEADER_BYTES);
  header.set(MAGIC);
  header[4] = VERSION;
  new DataView(header.buffer).setUint32(5, CHUNK_SIZE);
  crypto.getRandomValues(header.subarray(9));
  return header;
}

/** The chunk size the header declares; throws a reason when this is not a version 1 header. */
function readHeader(header: Uint8Array<ArrayBuffer>): number {
  if (MAGIC.some((byte, i) => header[i] !== byte)) throw new Error("not an encrypted object (bad magic)");
  if (header[4] !== VERSION) throw new Error(`unsupported format version ${header[4]}`);
  const chunkSize = new DataView(header.buffer).getUint32(5);
  if (chunkSize < 1 || chunkSize > MAX_CHUNK_SIZE) throw new Error(`invalid chunk size ${chunkSize}`);
  return chunkSize;
}

/** The stored form of `source`, produced as the consumer pulls. Cancelling it cancels the source. */
function encryptingStream(source: BodySource, masterKey: CryptoKey): ReadableStream<Uint8Array> {
  const header = newHeader();
  const pending = new ByteQueue();
  let cipher: RecordCipher;
  let index = 0;
  let ended = false;
  return new ReadableStream<Uint8Array>(
    {
      async start(controller) {
        cipher = await RecordCipher.forHeader(masterKey, header);
        controller.enqueue(header);
      },
      async pull(controller) {
        // A full chunk is sealed as non-final only once at least one more byte is known to follow.
        while (!ended && pending.length <= CHUNK_SIZE) {
          const chunk = await source.read();
          if (chunk === null) ended = true;
          else pending.push(chunk);
        }
        if (pending.length > CHUNK_SIZE) {
          controller.enqueue(await cipher.seal(index++, false, pending.take(CHUNK_SIZE)));
          return;
        }
        controller.enqueue(await cipher.seal(index++, true, pending.take(pending.length)));
        controller.close();
      },
      cancel: (reason) => source.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/**
 * Reads the header and decrypts the first record before returning, so a wrong key
 * or an unencrypted object fails `get` itself rather than a response already under
 * way; later records are decrypted as the consumer pulls, and a bad one errors the
 * stream.
 */
async function decrypt(key: string, stored: StoredObject, masterKey: CryptoKey): Promise<StoredObject> {
  const reader = stored.body.getReader();
  const buffered = new ByteQueue();
  let sourceEnded = false;
  const fill = async (bytes: number) => {
    while (!sourceEnded && buffered.length < bytes) {
      const { done, value } = await reader.read();
      if (done) sourceEnded = true;
      else buffered.push(value);
    }
  };

  let chunkSize: number;
  let cipher: RecordCipher;
  let index = 0;
  let finished = false;
  /** The next record's plaintext. */
  const next = async (): Promise<Uint8Array> => {
    const recordSize = chunkSize + TAG_BYTES;
    await fill(recordSize + 1);
    const final = buffered.length <= recordSize;
    if (final && buffered.length < TAG_BYTES) {
      throw new ObjectDecryptionError(key, "truncated (a record is shorter than its tag)");
    }
    const record = buffered.take(final ? buffered.length : recordSize);
    try {
      const plaintext = await cipher.open(index, final, record);
      index++;
      finished = final;
      return plaintext;
    } catch {
      throw new ObjectDecryptionError(
        key,
        `record ${index} failed authentication: wrong encryption key, or the stored object was modified, truncated or extended`,
      );
    }
  };

  let first: Uint8Array;
  try {
    await fill(HEADER_BYTES);
    if (buffered.length < HEADER_BYTES) throw new ObjectDecryptionError(key, "truncated header");
    const header = buffered.take(HEADER_BYTES);
    try {
      chunkSize = readHeader(header);
    } catch (error) {
      throw new ObjectDecryptionError(key, (error as Error).message);
    }
    cipher = await RecordCipher.forHeader(masterKey, header);
    first = await next();
  } catch (error) {
    await reader.cancel(error).catch(() => undefined);
    throw error;
  }

  let ready: Uint8Array | null = first;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const plaintext: Uint8Array = ready ?? (await next());
          ready = null;
          // Only a final record can be empty (the empty object), so every pull enqueues or closes.
          if (plaintext.byteLength > 0) controller.enqueue(plaintext);
          if (finished) controller.close();
        } catch (error) {
          await reader.cancel(error).catch(() => undefined);
          throw error;
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  const size = stored.size === undefined ? undefined : plaintextSize(stored.size, chunkSize);
  return { body, size, contentType: stored.contentType };
}
