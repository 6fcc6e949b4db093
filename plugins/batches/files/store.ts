/**
 * The files of the batch APIs: a record in the key-value store (its owner, name, size and
 * purpose) and the bytes in the object store, streamed in and out (never whole in memory).
 * Every file is deleted after `batches.retention`: its record expires, and the sweep removes
 * its bytes then (a deletion the caller could not finish is finished by the sweep as well).
 */
import { claimDue } from "../../../core/stores/atomic-ops.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { ObjectStore, StoredObject } from "../../../core/stores/objects.ts";
import { idTime, newId } from "../ids.ts";
import { batchKeys } from "../keys.ts";
import { newestFirst, type NewestFirstPage } from "../newest-first.ts";
import { fileCreate, fileDelete } from "./ops.ts";

/** `batch` for uploads; a batch's output and error files are `batch_output`. */
export type FilePurpose = "batch" | "batch_output";

export const UPLOAD_PURPOSES: readonly FilePurpose[] = ["batch"];

/** A stored file's record (the wire object is `fileView`). */
export interface FileRecord {
  id: string;
  bytes: number;
  /** Unix seconds. */
  created_at: number;
  filename: string;
  purpose: FilePurpose;
  /** The consumer that owns it ("" for an anonymous caller). */
  owner: string;
  content_type: string;
  /** Unix seconds: when retention deletes it. */
  expires_at: number;
}

/** The OpenAI File object. */
export function fileView(file: FileRecord): Record<string, unknown> {
  return {
    id: file.id,
    object: "file",
    bytes: file.bytes,
    created_at: file.created_at,
    expires_at: file.expires_at,
    filename: file.filename,
    purpose: file.purpose,
    status: "processed",
    status_details: null,
  };
}

export interface FileStoreDeps {
  kv: KvStore;
  objects: ObjectStore;
  now(): number;
  uuid(): string;
  retentionMs: number;
}

export interface NewFile {
  owner: string;
  filename: string;
  purpose: FilePurpose;
  contentType: string;
  body: ReadableStream<Uint8Array>;
}

const SWEEP_BATCH = 100;
/**
 * How long a sweep holds the files it took: they stay on the schedule, due again once this has
 * passed, until their bytes are deleted. A process that dies in between leaves them to a later
 * sweep instead of leaving their bytes behind for good.
 */
export const SWEEP_LEASE_MS = 5 * 60_000;

export class FileStore {
  constructor(private readonly deps: FileStoreDeps) {}

  /** Where a file's bytes are (written before its record is saved). */
  objectKey(id: string): string {
    return batchKeys.fileObject(id);
  }

  /** A new file id (its bytes can be written under it before the record exists). */
  newFileId(): string {
    return newId("file-", this.deps.now(), this.deps.uuid());
  }

  /**
   * Streams `body` into the object store, then saves the record. A failed or refused stream
   * leaves nothing behind (the object store drops a failed put).
   */
  async create(file: NewFile, id = this.newFileId()): Promise<FileRecord> {
    const key = batchKeys.fileObject(id);
    const { size } = await this.deps.objects.put(key, file.body, { contentType: file.contentType });
    try {
      return await this.save(id, file, size);
    } catch (error) {
      await this.deps.objects.delete(key).catch(() => {});
      throw error;
    }
  }

  /** Saves the record of bytes already written under `fileObject(id)`. */
  async save(id: string, file: Omit<NewFile, "body">, bytes: number): Promise<FileRecord> {
    const now = this.deps.now();
    const created = idTime(id, "file-") ?? now;
    const record: FileRecord = {
      id,
      bytes,
      created_at: Math.floor(created / 1000),
      filename: file.filename,
      purpose: file.purpose,
      owner: file.owner,
      content_type: file.contentType,
      expires_at: Math.floor((now + this.deps.retentionMs) / 1000),
    };
    await this.deps.kv.run(
      fileCreate,
      [batchKeys.file(id), batchKeys.filesOf(file.owner), batchKeys.fileExpiry],
      [id, JSON.stringify(record), this.deps.retentionMs, -created, now + this.deps.retentionMs],
    );
    return record;
  }

  async get(id: string): Promise<FileRecord | null> {
    if (idTime(id, "file-") === undefined) return null;
    const text = await this.deps.kv.get(batchKeys.file(id));
    return text === null ? null : (JSON.parse(text) as FileRecord);
  }

  /** The file's bytes; null when they are gone. */
  content(file: FileRecord): Promise<StoredObject | null> {
    return this.deps.objects.get(batchKeys.fileObject(file.id));
  }

  /** The owner's files, newest first, `purpose` alone when given. */
  list(owner: string, options: { after?: string; limit: number; purpose?: string }): Promise<NewestFirstPage<FileRecord>> {
    const afterTime = options.after === undefined ? undefined : idTime(options.after, "file-");
    const cursor = options.after !== undefined && afterTime !== undefined ? { after: options.after, afterTime } : undefined;
    return newestFirst(this.deps.kv, batchKeys.filesOf(owner), cursor, options.limit, (id) => idTime(id, "file-"), async (id) => {
      const file = await this.get(id);
      if (!file) return "gone";
      return options.purpose === undefined || file.purpose === options.purpose ? file : "skip";
    });
  }

  /** Deletes the record, then the bytes. False when the file was already gone. */
  async delete(file: FileRecord): Promise<boolean> {
    const deleted = await this.deps.kv.run(fileDelete, [batchKeys.file(file.id), batchKeys.filesOf(file.owner), batchKeys.fileExpiry], [
      file.id,
      this.deps.now(),
    ]);
    if (deleted === 0) return false;
    await this.removeBytes(file.id);
    return true;
  }

  /** Deletes the files whose retention has passed (and finishes deletions left half done). Returns how many. */
  async sweep(): Promise<number> {
    const now = this.deps.now();
    const leaseUntil = now + SWEEP_LEASE_MS;
    const due = await this.deps.kv.run(claimDue, [batchKeys.fileExpiry], [now, SWEEP_BATCH, leaseUntil]);
    for (const id of due) {
      const file = await this.get(id);
      // The record's deletion keeps the file on the schedule at the lease's end, as the claim left it.
      if (file) await this.deps.kv.run(fileDelete, [batchKeys.file(id), batchKeys.filesOf(file.owner), batchKeys.fileExpiry], [id, leaseUntil]);
      await this.removeBytes(id);
    }
    return due.length;
  }

  private async removeBytes(id: string): Promise<void> {
    await this.deps.objects.delete(batchKeys.fileObject(id));
    await this.deps.kv.zrem(batchKeys.fileExpiry, id);
  }
}
