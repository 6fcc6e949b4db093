/**
 * The `redis` and `object_store` blocks of a test gateway's config: the suite's own
 * redis-server and s3rver (test/support/global-setup.ts) unless a test brings its own.
 */
import { createClient } from "redis";
import { inject } from "vitest";

export interface StoresOptions {
  /** A Redis database of its own keeps a test's keys apart from the others'. */
  db?: number;
  bucket: string;
  redisAddr?: string;
  s3Endpoint?: string;
  /** A whole `redis:` block instead (Sentinel, Cluster: test/support/scenario-redis.ts). */
  redisYaml?: string;
}

/** The blocks, without a final newline: `${storesYaml(...)}` stands on a line of its own. */
export function storesYaml(options: StoresOptions): string {
  const db = options.db === undefined ? "" : `  db: ${options.db}\n`;
  const redis = options.redisYaml === undefined
    ? `redis:\n  addr: ${JSON.stringify(options.redisAddr ?? inject("redisUrl"))}\n${db}`
    : `${options.redisYaml}\n`;
  return `${redis}object_store:
  endpoint: ${JSON.stringify(options.s3Endpoint ?? inject("s3Endpoint"))}
  access_key: S3RVER
  secret_key: S3RVER
  bucket: ${options.bucket}`;
}

/** A gateway's `redis:` block: the suite's redis-server, database `db`, or "" for the embedded store. */
export function kvStoreYaml(store: "memory" | "redis", db: number): string {
  return store === "redis" ? `redis:\n  addr: ${JSON.stringify(inject("redisUrl"))}\n  db: ${db}` : "";
}

/** Empties database `db` of the suite's redis-server: a test file's own (`const DB = N`), at its start. */
export async function flushRedisDb(db: number): Promise<void> {
  const client = createClient({ url: inject("redisUrl"), database: db });
  await client.connect();
  await client.flushDb();
  await client.close();
}
