/**
 * Opens the stores the config names: Redis when `redis.addr`, `redis.sentinel.addrs` or
 * `redis.cluster.addrs` is set (config validation allows one), else the embedded memory store; S3 when `object_store.endpoint` is set, else files under `object_store.dir`;
 * wrapped with AES-256-GCM when `object_store.encryption.key` is set.
 */
import { readFileSync } from "node:fs";
import { systemClock } from "../core/clock.ts";
import { durationMs } from "../core/config/duration.ts";
import { redisModeOf } from "../core/config/redis-mode.ts";
import { fieldsOf, type GatewayConfig } from "../core/config/schema.ts";
import type { Stores } from "../core/gateway.ts";
import type { Logger } from "../core/log.ts";
import { encryptedObjects } from "../core/stores/encryption.ts";
import { EVICTABLE_PREFIX, type KvStore } from "../core/stores/kv.ts";
import type { ObjectStore } from "../core/stores/objects.ts";
import { MemoryKv } from "./kv-memory/index.ts";
import { redisUrlFromAddr } from "./kv-redis/address.ts";
import { FsObjectStore } from "./objects-fs/index.ts";
import { embeddedCacheFields } from "../plugins/response-cache/config.ts";

// The Redis and S3 clients are loaded only when the config names them: the S3 SDK alone adds
// ~12 MB of resident memory to a gateway that never uses it (Redis ~5 MB).

export async function openStores(config: GatewayConfig, log: Logger): Promise<Stores> {
  let kv: KvStore;
  const redis = config.redis;
  const mode = redisModeOf(redis);
  if (mode === undefined) {
    log.warn("embedded_kv_store", {
      message:
        "redis.addr is empty: using the embedded in-memory store. It serves one process only and loses every job, counter and queue on restart; set redis.addr (or redis.sentinel / redis.cluster) for production or several replicas.",
    });
    // The response cache's setting: its answers are what the embedded store may drop.
    const capMb = fieldsOf(config, embeddedCacheFields).embedded_cache_max_mb;
    kv = new MemoryKv(systemClock, capMb > 0 ? { evictable: { prefix: EVICTABLE_PREFIX, maxBytes: capMb * 1024 * 1024 } } : {});
  } else {
    const { RedisKv } = await import("./kv-redis/index.ts");
    const tls = redis.tls.enabled
      ? { ca: redis.tls.ca_file === "" ? undefined : readFileSync(redis.tls.ca_file, "utf8"), serverName: redis.tls.server_name || undefined }
      : undefined;
    const target = mode.kind === "cluster" ? { cluster: { nodes: mode.nodes } } : mode.kind === "sentinel"
      ? {
        sentinel: {
          masterName: mode.masterName,
          sentinels: mode.nodes,
          sentinelUsername: redis.sentinel.username || undefined,
          sentinelPassword: redis.sentinel.password || undefined,
        },
      }
      : { url: redisUrlFromAddr(mode.addr) };
    const store = new RedisKv({
      ...target,
      username: redis.username || undefined,
      password: redis.password || undefined,
      db: mode.kind === "cluster" ? undefined : redis.db,
      tls,
      commandTimeoutMs: durationMs(redis.command_timeout),
      // Repeats on every reconnect attempt; the logger collapses the repeats (core/log.ts).
      onError: (error) => log.error("kv_store_connection_error", { addr: mode.where, error }),
    });
    // Start anyway when Redis is down: the client keeps reconnecting, limit checks fail open,
    // and /health?ready=1 reports it until Redis answers.
    await store
      .connected()
      .then(() => store.ping())
      .catch((error: unknown) => log.error("kv_store_unavailable_at_start", { addr: mode.where, error }));
    kv = store;
  }

  const store = config.object_store;
  let objects: ObjectStore;
  if (store.endpoint === "") {
    objects = new FsObjectStore({ dir: store.dir });
  } else {
    const { S3ObjectStore } = await import("./objects-s3/index.ts");
    const s3 = new S3ObjectStore({
      endpoint: store.endpoint,
      region: store.region,
      accessKey: store.access_key,
      secretKey: store.secret_key,
      bucket: store.bucket,
    });
    await s3.ensureBucket().catch((error: unknown) => log.warn("object_store_bucket_check_failed", { bucket: store.bucket, error }));
    objects = s3;
  }
  if (store.encryption.key !== "") objects = encryptedObjects(objects, store.encryption.key);
  return { kv, objects };
}
