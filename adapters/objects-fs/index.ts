/**
 * Object store on a local directory: key `a/b/c` is the file `<dir>/a/b/c`.
 *
 * Store-owned files (upload temp files, content-type sidecars, ping probes) have
 * names starting with `.igw-`; keys may not use that prefix in any segment, and
 * `list` skips such names. A content type is kept in `.igw-type.<name>` next to
 * the object because a plain file has nowhere else to keep it portably.
 *
 * Unlike S3, a key cannot also be a "directory" of other keys: `a` and `a/b`
 * cannot both exist. Such a put fails with a message saying so.
 */
import type { FileHandle } from "node:fs/promises";
import { lstat, mkdir, open, opendir, readFile, rename, rmdir, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import type { ObjectInfo, ObjectStore, PutOptions, StoredObject } from "../../core/stores/objects.ts";
import { BodySource } from "../../core/stores/streams.ts";

const INTERNAL_PREFIX = ".igw-";
const TYPE_PREFIX = `${INTERNAL_PREFIX}type.`;
const READ_CHUNK = 64 * 1024;

export interface FsObjectStoreOptions {
  /** Root directory; created on first write or ping. */
  dir: string;
}

export class InvalidObjectKeyError extends Error {
  override name = "InvalidObjectKeyError";
  constructor(key: string, reason: string) {
    super(`invalid object key ${JSON.stringify(key)}: ${reason}`);
  }
}

export class FsObjectStore implements ObjectStore {
  readonly kind = "fs";
  readonly root: string;

  constructor(options: FsObjectStoreOptions) {
    this.root = resolve(options.dir);
  }

  async put(key: string, body: ReadableStream<Uint8Array> | Uint8Array, options?: PutOptions): Promise<{ size: number }> {
    const source = new BodySource(body);
    let temp: { path: string; handle: FileHandle; createdDir: boolean } | undefined;
    let tempPath: string | undefined;
    try {
      const target = this.pathOf(key);
      temp = await this.createTemp(dirname(target), key);
      tempPath = temp.path;
      // Fail before reading what may be a large body, not at the final rename. A directory
      // this put just created holds nothing yet, so the (costly, usually ENOENT) check is
      // only needed when it already existed.
      if (!temp.createdDir && (await isDirectory(target))) throw clash(key);
      for (let chunk = await source.read(); chunk !== null; chunk = await source.read()) {
        await writeAll(temp.handle, chunk);
      }
      // Without the sync a crash soon after the rename can leave an empty or partial file under the final name.
      await temp.handle.datasync();
      await temp.handle.close();
      temp = undefined;
      await this.setContentType(target, options?.contentType);
      await rename(tempPath, target).catch(async (error: unknown) => {
        const reported = conflictOr(error, key);
        // The clash means no object exists under this name, so the sidecar just written belongs to nothing.
        if (reported !== error) await unlink(typePathOf(target)).catch(() => undefined);
        throw reported;
      });
      tempPath = undefined;
      return { size: source.bytes };
    } catch (error) {
      await source.cancel(error);
      await temp?.handle.close().catch(() => undefined);
      if (tempPath !== undefined) {
        await unlink(tempPath).catch(() => undefined);
        await this.pruneEmptyDirs(dirname(tempPath));
      }
      throw error;
    }
  }

  async get(key: string): Promise<StoredObject | null> {
    const path = this.pathOf(key);
    let handle: FileHandle;
    try {
      handle = await open(path, "r");
    } catch (error) {
      if (hasCode(error, "ENOENT", "ENOTDIR")) return null;
      throw error;
    }
    // Reading through the handle opened here means a concurrent overwrite or delete
    // (both replace the directory entry, not the file) cannot mix two versions.
    try {
      const info = await handle.stat();
      if (!info.isFile()) {
        await handle.close();
        return null;
      }
      return { body: fileStream(handle), size: info.size, contentType: await this.contentTypeOf(path) };
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.pathOf(key);
    try {
      await unlink(path);
    } catch (error) {
      if (!hasCode(error, "ENOENT", "ENOTDIR") && !(await isDirectory(path))) throw error;
    }
    await unlink(typePathOf(path)).catch(ignoreMissing);
    await this.pruneEmptyDirs(dirname(path));
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    // Start in the deepest directory the prefix names in full, so listing "jobs/42/"
    // reads that directory only.
    const cut = prefix.lastIndexOf("/");
    const base = cut < 0 ? [] : prefix.slice(0, cut).split("/");
    // No valid key lives under an invalid path (and ".." must not walk out of the root).
    if (base.some((segment) => segmentProblem(segment) !== null)) return;
    yield* this.walk(base, prefix);
  }

  async ping(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    const probe = join(this.root, `${INTERNAL_PREFIX}ping.${crypto.randomUUID()}`);
    const handle = await open(probe, "wx");
    await handle.close();
    await unlink(probe);
  }

  async close(): Promise<void> {
    // Nothing is held open between calls.
  }

  private pathOf(key: string): string {
    return join(this.root, ...keySegments(key));
  }

  private async *walk(segments: string[], prefix: string): AsyncGenerator<ObjectInfo> {
    const dirPath = join(this.root, ...segments);
    let dir;
    try {
      dir = await opendir(dirPath);
    } catch (error) {
      if (hasCode(error, "ENOENT", "ENOTDIR")) return;
      throw error;
    }
    // for-await closes the directory handle however the loop ends.
    for await (const entry of dir) {
      if (entry.name.startsWith(INTERNAL_PREFIX)) continue;
      const key = [...segments, entry.name].join("/");
      if (entry.isDirectory()) {
        if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) yield* this.walk([...segments, entry.name], prefix);
      } else if (entry.isFile() && key.startsWith(prefix)) {
        try {
          const info = await lstat(join(dirPath, entry.name));
          yield { key, size: info.size, lastModified: info.mtime };
        } catch (error) {
          // Deleted since the directory was read: it is simply not there any more.
          if (!hasCode(error, "ENOENT")) throw error;
        }
      }
    }
  }

  /** Creates a uniquely named temp file in `dir`, creating `dir` first; `createdDir` when `dir` did not exist. */
  private async createTemp(dir: string, key: string): Promise<{ path: string; handle: FileHandle; createdDir: boolean }> {
    // A concurrent delete may prune the directory between mkdir and open; try again then.
    for (let attempt = 1;; attempt++) {
      // With `recursive`, mkdir answers the first directory it created, undefined when all existed.
      const created = await mkdir(dir, { recursive: true }).catch((error: unknown) => {
        throw conflictOr(error, key);
      });
      const path = join(dir, `${INTERNAL_PREFIX}tmp.${crypto.randomUUID()}`);
      try {
        return { path, handle: await open(path, "wx"), createdDir: created !== undefined };
      } catch (error) {
        if (!hasCode(error, "ENOENT") || attempt >= 3) throw conflictOr(error, key);
      }
    }
  }

  private async setContentType(objectPath: string, contentType: string | undefined): Promise<void> {
    const typePath = typePathOf(objectPath);
    if (contentType === undefined) {
      await unlink(typePath).catch(ignoreMissing);
      return;
    }
    const temp = join(dirname(objectPath), `${INTERNAL_PREFIX}tmp.${crypto.randomUUID()}`);
    const handle = await open(temp, "wx");
    try {
      await writeAll(handle, new TextEncoder().encode(contentType));
    } finally {
      await handle.close();
    }
    await rename(temp, typePath).catch(async (error: unknown) => {
      await unlink(temp).catch(() => undefined);
      throw error;
    });
  }

  private async contentTypeOf(objectPath: string): Promise<string | undefined> {
    try {
      return await readFile(typePathOf(objectPath), "utf8");
    } catch (error) {
      if (hasCode(error, "ENOENT")) return undefined;
      throw error;
    }
  }

  /** Removes now-empty directories up to (not including) the root, so deleted keys leave no tree behind. */
  private async pruneEmptyDirs(from: string): Promise<void> {
    for (let dir = from; dir !== this.root && dir.startsWith(this.root); dir = dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        return; // not empty (or already gone): everything above is in use too
      }
    }
  }
}

/** Validates a key and splits it into path segments. */
function keySegments(key: string): string[] {
  if (key === "") throw new InvalidObjectKeyError(key, "empty");
  if (key.startsWith("/") || /^[A-Za-z]:/.test(key)) throw new InvalidObjectKeyError(key, "absolute keys are not allowed");
  if (key.includes("\\")) throw new InvalidObjectKeyError(key, "backslashes are not allowed (use / between segments)");
  if (key.includes("\0")) throw new InvalidObjectKeyError(key, "NUL characters are not allowed");
  const segments = key.split("/");
  for (const segment of segments) {
    const problem = segmentProblem(segment);
    if (problem) throw new InvalidObjectKeyError(key, problem);
  }
  return segments;
}

function segmentProblem(segment: string): string | null {
  if (segment === "") return "empty path segment (leading, trailing or double slash)";
  if (segment === "." || segment === "..") return `"${segment}" segments are not allowed`;
  if (segment.startsWith(INTERNAL_PREFIX)) return `segments starting with "${INTERNAL_PREFIX}" are reserved for the store`;
  return null;
}

function typePathOf(objectPath: string): string {
  return join(dirname(objectPath), `${TYPE_PREFIX}${basename(objectPath)}`);
}

async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let offset = 0; offset < chunk.byteLength;) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
    offset += bytesWritten;
  }
}

/** Reads the open file in 64 KiB chunks as the consumer pulls, closing it at the end, on error or on cancel. */
function fileStream(handle: FileHandle): ReadableStream<Uint8Array> {
  let closed = false;
  const closeOnce = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const buffer = new Uint8Array(READ_CHUNK);
        const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, null);
        if (bytesRead === 0) {
          await closeOnce();
          controller.close();
          return;
        }
        controller.enqueue(bytesRead === READ_CHUNK ? buffer : buffer.subarray(0, bytesRead));
      } catch (error) {
        await closeOnce().catch(() => undefined);
        throw error;
      }
    },
    cancel: closeOnce,
  });
}

function clash(key: string): InvalidObjectKeyError {
  return new InvalidObjectKeyError(
    key,
    'clashes with an existing key: the file store cannot hold both a key and keys below it ("a" and "a/b")',
  );
}

/** Turns "a path component is a file" / "the target is a directory" into an error naming the key clash. */
function conflictOr(error: unknown, key: string): unknown {
  return hasCode(error, "ENOTDIR", "EEXIST", "EISDIR", "ENOTEMPTY") ? clash(key) : error;
}

function hasCode(error: unknown, ...codes: string[]): boolean {
  return typeof error === "object" && error !== null && "code" in error && codes.includes(String(error.code));
}

function ignoreMissing(error: unknown): void {
  if (!hasCode(error, "ENOENT", "ENOTDIR")) throw error;
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch {
    return false;
  }
}
