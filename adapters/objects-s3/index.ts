/**
 * Object store on any S3-protocol server (AWS S3, MinIO, s3rver, ...) through
 * @aws-sdk/client-s3. Uploads go through @aws-sdk/lib-storage's multipart `Upload`
 * so memory stays bounded by part size x queue size, whatever the object size.
 */
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  S3Client,
} from "@aws-sdk/client-s3";
import type { BucketLocationConstraint } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import type { ObjectInfo, ObjectStore, PutOptions, StoredObject } from "../../core/stores/objects.ts";
import { BodySource } from "../../core/stores/streams.ts";

/** S3's minimum part size: the whole body is never buffered beyond PART_SIZE x (QUEUE_SIZE + 1). */
const PART_SIZE = 5 * 1024 * 1024;
const QUEUE_SIZE = 2;
const PING_TIMEOUT_MS = 5_000;

export interface S3ObjectStoreOptions {
  /** Empty or absent means AWS itself. */
  endpoint?: string;
  region?: string;
  /** With `secretKey`; both absent means the SDK's default credential chain (env, profile, instance role). */
  accessKey?: string;
  secretKey?: string;
  bucket: string;
  /** Keys per ListObjectsV2 page; 1000 (the S3 maximum) unless a test wants many pages. */
  listPageSize?: number;
}

export class S3ObjectStore implements ObjectStore {
  readonly kind = "s3";
  readonly bucket: string;
  private readonly client: S3Client;
  private readonly region: string;
  private readonly listPageSize: number;

  constructor(options: S3ObjectStoreOptions) {
    this.bucket = options.bucket;
    this.region = options.region || "us-east-1";
    this.listPageSize = options.listPageSize ?? 1000;
    this.client = new S3Client({
      endpoint: options.endpoint || undefined,
      region: this.region,
      credentials: options.accessKey || options.secretKey ? { accessKeyId: options.accessKey ?? "", secretAccessKey: options.secretKey ?? "" } : undefined,
      // Path-style URLs: S3-compatible servers usually have no wildcard DNS for bucket subdomains.
      forcePathStyle: true,
      // The SDK's default CRC32 checksums on every request are not understood by many
      // S3-compatible servers (s3rver, older MinIO); send them only where S3 requires them.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  }

  async put(key: string, body: ReadableStream<Uint8Array> | Uint8Array, options?: PutOptions): Promise<{ size: number }> {
    // A Uint8Array is sliced into parts in place; a stream is read a part at a time.
    if (body instanceof Uint8Array) {
      await this.upload(key, body, options);
      return { size: body.byteLength };
    }
    const source = new BodySource(body);
    try {
      await this.upload(key, source.stream(), options);
    } catch (error) {
      await source.cancel(error);
      throw error;
    }
    return { size: source.bytes };
  }

  async get(key: string): Promise<StoredObject | null> {
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const body = response.Body
        ? (response.Body.transformToWebStream() as ReadableStream<Uint8Array>)
        : new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
      return { body, size: response.ContentLength, contentType: response.ContentType };
    } catch (error) {
      if (isMissingKey(error)) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      // S3 itself answers 204 for a missing key; some compatible servers answer 404.
      if (!isMissingKey(error)) throw error;
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix || undefined,
          ContinuationToken: token,
          MaxKeys: this.listPageSize,
        }),
      );
      for (const item of page.Contents ?? []) {
        if (item.Key === undefined) continue;
        yield { key: item.Key, size: item.Size ?? 0, lastModified: item.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async ping(): Promise<void> {
    // Bounded, so a hung server fails the readiness check instead of hanging it.
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), {
      abortSignal: AbortSignal.timeout(PING_TIMEOUT_MS),
    });
  }

  /** Creates the bucket when it does not exist yet. Called once at startup. */
  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      return;
    } catch (error) {
      if (!isMissingBucket(error)) throw error;
    }
    try {
      await this.client.send(
        new CreateBucketCommand({
          Bucket: this.bucket,
          // AWS rejects an explicit us-east-1 constraint and requires one everywhere else.
          CreateBucketConfiguration: this.region === "us-east-1" ? undefined : { LocationConstraint: this.region as BucketLocationConstraint },
        }),
      );
    } catch (error) {
      // Another replica created it between our HEAD and CREATE.
      if (errorName(error) !== "BucketAlreadyOwnedByYou") throw error;
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  private async upload(key: string, body: ReadableStream<Uint8Array> | Uint8Array, options?: PutOptions): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body, ContentType: options?.contentType },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      // We abort ourselves: lib-storage would throw the abort's error instead of the
      // upload's when the abort fails too (s3rver, for one, does not implement it).
      leavePartsOnError: true,
    });
    try {
      await upload.done();
    } catch (error) {
      await this.abortMultipart(key, upload.uploadId);
      throw error;
    }
  }

  /**
   * Best effort: the upload has already failed and that is the error to report. Parts
   * left behind by a failed abort are invisible to get and list; a bucket lifecycle
   * rule (AbortIncompleteMultipartUpload) reclaims them on real S3.
   */
  private async abortMultipart(key: string, uploadId: string | undefined): Promise<void> {
    if (!uploadId) return;
    await this.client
      .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }))
      .catch(() => undefined);
  }
}

function errorName(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "name" in error ? String(error.name) : undefined;
}

function httpStatus(error: unknown): number | undefined {
  const metadata = typeof error === "object" && error !== null && "$metadata" in error ? error.$metadata : undefined;
  const status = typeof metadata === "object" && metadata !== null && "httpStatusCode" in metadata ? metadata.httpStatusCode : undefined;
  return typeof status === "number" ? status : undefined;
}

/** A 404 about the key, not the bucket: a missing bucket is a configuration error and must surface. */
function isMissingKey(error: unknown): boolean {
  const name = errorName(error);
  return name === "NoSuchKey" || (httpStatus(error) === 404 && name !== "NoSuchBucket");
}

/** HeadBucket's 404 carries no error code, only the status. */
function isMissingBucket(error: unknown): boolean {
  return errorName(error) === "NoSuchBucket" || httpStatus(error) === 404;
}
