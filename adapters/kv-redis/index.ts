/**
 * The Redis key-value store, on node-redis v5 over RESP2: one Redis (`redis.addr`), a
 * Sentinel-managed primary (`redis.sentinel`) or a Cluster (`redis.cluster`); the link
 * files own connecting and routing, this file the command set.
 *
 * Availability model: the clients connect in the background and reconnect forever with
 * capped backoff, so a Redis restart or failover heals without restarting the gateway.
 * While disconnected every command fails at once (`disableOfflineQueue`) instead of
 * queueing: callers get an error they can turn into a 503 rather than a request that
 * hangs until Redis returns.
 *
 * A Redis that keeps the connection open but stops answering (stopped process, network
 * black hole) is bounded too: every command waits at most `commandTimeoutMs` for its reply
 * and fails like any store error (see deadline.ts), and a connection that stays silent
 * despite a PING every second is dropped and reopened (see link.ts `silentConnectionMs`).
 *
 * On a Cluster every key is stored under the hash tag of its owner (core/stores/hash-tags.ts),
 * so the keys of one atomic operation share a slot; callers keep using the plain names.
 */
import { createHash } from "node:crypto";
import { ClientClosedError, ClientOfflineError } from "redis";
import { clusterKey, keyOfClusterName } from "../../core/stores/hash-tags.ts";
import type { AtomicOp, KvReply, KvStore, ListEnd, ScanPage } from "../../core/stores/kv.ts";
import { redisUrlFromAddr } from "./address.ts";
import { RedisNoReplyError, type ReplyDeadline } from "./deadline.ts";
import type { RedisLink, RedisTls } from "./link.ts";
import { ClusterLink } from "./link-cluster.ts";
import { SentinelLink, type SentinelTarget } from "./link-sentinel.ts";
import { SingleLink } from "./link-single.ts";
import {
  asInteger,
  asKvReply,
  asNullableString,
  asNullableStringArray,
  asRecord,
  asScanPage,
  asString,
  asStringArray,
  formatDouble,
  parseDouble,
} from "./replies.ts";

export { redisUrlFromAddr } from "./address.ts";
export type { RedisTls } from "./link.ts";
export type { SentinelTarget } from "./link-sentinel.ts";

export interface RedisKvOptions {
  /** One Redis: `redis://…` / `rediss://…` URL, or `host:port`. */
  url?: string;
  /** A Sentinel-managed primary. */
  sentinel?: SentinelTarget;
  /** A Cluster: host:port of some of its nodes. */
  cluster?: { nodes: string[] };
  username?: string;
  password?: string;
  /** Database index (SELECT); not on a cluster. */
  db?: number;
  /** TLS to every node; a rediss:// URL turns it on for one Redis without this. */
  tls?: RedisTls;
  /** Per connection attempt, ms. */
  connectTimeoutMs?: number;
  /**
   * The longest wait for one command's reply, ms (`redis.command_timeout`, default 500): a
   * limit check runs on every request, so it must fail open quickly.
   */
  commandTimeoutMs?: number;
  /** Upper bound of the reconnect backoff, ms. */
  maxReconnectDelayMs?: number;
  /** Connection errors (each failed reconnect attempt reports one). Defaults to ignoring them. */
  onError?: (error: Error) => void;
}

const DEFAULT_COMMAND_TIMEOUT_MS = 500;

const END: Record<ListEnd, string> = { head: "LEFT", tail: "RIGHT" };

/** Escapes SCAN MATCH glob syntax so a prefix matches only itself. */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

/** Node reports some connect failures as an AggregateError with an empty message. */
function describeError(error: Error): string {
  const code = (error as { code?: unknown }).code;
  return error.message || (typeof code === "string" ? code : error.name);
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}

export class RedisKv implements KvStore {
  readonly kind = "redis";
  private readonly link: RedisLink;
  /** The stored name of a key: the key itself, or on a cluster the key behind its owner's hash tag. */
  private readonly k: (key: string) => string;
  private readonly clustered: boolean;
  private readonly connectTimeoutMs: number;
  private closed = false;
  private readonly scripts = new Map<string, { lua: string; sha: string }>();

  /** Starts connecting in the background; commands issued before the first attempt settles wait for it. */
  constructor(options: RedisKvOptions) {
    const link = {
      username: options.username || undefined,
      password: options.password || undefined,
      db: options.db,
      tls: options.tls,
      connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
      commandTimeoutMs: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      maxReconnectDelayMs: options.maxReconnectDelayMs ?? 2_000,
      onError: options.onError ?? (() => {}),
    };
    this.clustered = options.cluster !== undefined;
    this.connectTimeoutMs = link.connectTimeoutMs;
    this.k = this.clustered ? clusterKey : (key) => key;
    if (options.cluster) this.link = new ClusterLink(options.cluster.nodes, link);
    else if (options.sentinel) this.link = new SentinelLink(options.sentinel, link);
    else if (options.url !== undefined) this.link = new SingleLink(redisUrlFromAddr(options.url), link);
    else throw new Error("RedisKv needs a url, a sentinel or a cluster");
  }

  /** Connects and checks the server answers; rejects (and cleans up) when it does not. */
  static async connect(options: RedisKvOptions): Promise<RedisKv> {
    const kv = new RedisKv(options);
    try {
      await kv.connected();
      await kv.ping();
    } catch (error) {
      await kv.close();
      throw error;
    }
    return kv;
  }

  /**
   * Waits (at most the connect timeout) for the first connection attempt to settle. A
   * Sentinel or Cluster client first asks for the topology, which can take longer than one
   * command's bound; at start that wait is worth it, later commands fail fast instead.
   */
  async connected(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.link.firstAttempt, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.connectTimeoutMs)))]);
    clearTimeout(timer);
  }

  async get(key: string): Promise<string | null> {
    return asNullableString(await this.send(["GET", this.k(key)]), "GET");
  }

  async mget(keys: string[]): Promise<(string | null)[]> {
    if (keys.length === 0) return [];
    return asNullableStringArray(await this.send(["MGET", ...keys.map(this.k)]), "MGET");
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    await this.send(ttlMs === undefined ? ["SET", this.k(key), value] : ["SET", this.k(key), value, "PX", String(ttlMs)]);
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    const args = ["SET", this.k(key), value, "NX"];
    if (ttlMs !== undefined) args.push("PX", String(ttlMs));
    return (await this.send(args)) !== null;
  }

  async del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return asInteger(await this.send(["DEL", ...keys.map(this.k)]), "DEL");
  }

  async exists(key: string): Promise<boolean> {
    return asInteger(await this.send(["EXISTS", this.k(key)]), "EXISTS") === 1;
  }

  async incrBy(key: string, by: number): Promise<number> {
    return asInteger(await this.send(["INCRBY", this.k(key), String(by)]), "INCRBY");
  }

  async pexpire(key: string, ttlMs: number): Promise<boolean> {
    return asInteger(await this.send(["PEXPIRE", this.k(key), String(ttlMs)]), "PEXPIRE") === 1;
  }

  async pttl(key: string): Promise<number> {
    return asInteger(await this.send(["PTTL", this.k(key)]), "PTTL");
  }

  async hget(key: string, field: string): Promise<string | null> {
    return asNullableString(await this.send(["HGET", this.k(key), field]), "HGET");
  }

  async hset(key: string, fields: Record<string, string>): Promise<number> {
    const flat = Object.entries(fields).flat();
    // HSET with no fields is a syntax error in Redis; an empty update is a no-op here.
    if (flat.length === 0) return 0;
    return asInteger(await this.send(["HSET", this.k(key), ...flat]), "HSET");
  }

  async hdel(key: string, field: string): Promise<number> {
    return asInteger(await this.send(["HDEL", this.k(key), field]), "HDEL");
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    return asRecord(await this.send(["HGETALL", this.k(key)]), "HGETALL");
  }

  async hincrBy(key: string, field: string, by: number): Promise<number> {
    return asInteger(await this.send(["HINCRBY", this.k(key), field, String(by)]), "HINCRBY");
  }

  async hincrByFloat(key: string, field: string, by: number): Promise<number> {
    return parseDouble(asString(await this.send(["HINCRBYFLOAT", this.k(key), field, formatDouble(by)]), "HINCRBYFLOAT"));
  }

  async push(key: string, value: string, end: ListEnd): Promise<number> {
    return asInteger(await this.send([end === "head" ? "LPUSH" : "RPUSH", this.k(key), value]), "push");
  }

  async pop(key: string, end: ListEnd): Promise<string | null> {
    return asNullableString(await this.send([end === "head" ? "LPOP" : "RPOP", this.k(key)]), "pop");
  }

  async lrange(key: string, start: number, stop: number): Promise<string[]> {
    return asStringArray(await this.send(["LRANGE", this.k(key), String(start), String(stop)]), "LRANGE");
  }

  async lrem(key: string, count: number, value: string): Promise<number> {
    return asInteger(await this.send(["LREM", this.k(key), String(count), value]), "LREM");
  }

  async llen(key: string): Promise<number> {
    return asInteger(await this.send(["LLEN", this.k(key)]), "LLEN");
  }

  async move(from: string, to: string, fromEnd: ListEnd, toEnd: ListEnd): Promise<string | null> {
    return asNullableString(await this.send(["LMOVE", this.k(from), this.k(to), END[fromEnd], END[toEnd]]), "LMOVE");
  }

  async zadd(key: string, score: number, member: string): Promise<number> {
    return asInteger(await this.send(["ZADD", this.k(key), formatDouble(score), member]), "ZADD");
  }

  async zrem(key: string, member: string): Promise<number> {
    return asInteger(await this.send(["ZREM", this.k(key), member]), "ZREM");
  }

  async zscore(key: string, member: string): Promise<number | null> {
    const reply = asNullableString(await this.send(["ZSCORE", this.k(key), member]), "ZSCORE");
    return reply === null ? null : parseDouble(reply);
  }

  async zcard(key: string): Promise<number> {
    return asInteger(await this.send(["ZCARD", this.k(key)]), "ZCARD");
  }

  async zrangeByScore(key: string, min: number, max: number, limit?: number): Promise<string[]> {
    const args = ["ZRANGEBYSCORE", this.k(key), formatDouble(min), formatDouble(max)];
    if (limit !== undefined) args.push("LIMIT", "0", String(limit));
    return asStringArray(await this.send(args), "ZRANGEBYSCORE");
  }

  /**
   * One Redis or Sentinel: SCAN's own cursor. A cluster: every primary in turn, the cursor
   * being "<primary index>:<that primary's cursor>"; a primary added or removed mid-scan may
   * make the scan repeat or miss keys it moved (SCAN's own guarantee is per node).
   */
  async scan(prefix: string, cursor: string, count = 100): Promise<ScanPage> {
    if (!this.clustered) {
      return asScanPage(await this.send(["SCAN", cursor, "MATCH", `${globLiteral(prefix)}*`, "COUNT", String(count)]));
    }
    const [at, nodeCursor] = cursor === "0" ? [0, "0"] : [Number(cursor.slice(0, cursor.indexOf(":"))), cursor.slice(cursor.indexOf(":") + 1)];
    await this.link.firstAttempt;
    const primaries = this.link.primaries();
    const primary = primaries[at];
    if (!primary) return { keys: [], cursor: "0" };
    // The stored names carry a "{tag}" before the key: match anywhere, keep the keys that start with the prefix.
    const args = ["SCAN", nodeCursor, "MATCH", `*${globLiteral(prefix)}*`, "COUNT", String(count)];
    const page = asScanPage(await this.bounded(args, primary.deadline, () => primary.send(args)));
    const keys = page.keys.map(keyOfClusterName).filter((key) => key.startsWith(prefix));
    const next = page.cursor !== "0" ? `${at}:${page.cursor}` : at + 1 < primaries.length ? `${at + 1}:0` : "0";
    return { keys, cursor: next };
  }

  /**
   * EVALSHA with the SHA computed locally once per op; on NOSCRIPT (first use, or the
   * server restarted and lost its script cache) EVAL runs it and caches it server-side.
   */
  async run<R extends KvReply>(op: AtomicOp<R>, keys: string[], args: (string | number)[]): Promise<R> {
    const keyArgs = new Set(this.clustered ? (op.keyArgs ?? []) : []);
    const argv = args.map((arg, i) => (keyArgs.has(i) ? this.k(String(arg)) : String(arg)));
    const tail = [String(keys.length), ...keys.map(this.k), ...argv];
    let reply: unknown;
    try {
      reply = await this.send(["EVALSHA", this.shaOf(op), ...tail]);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      reply = await this.send(["EVAL", op.lua, ...tail]);
    }
    // The JS twin is the type witness for R; the contract suite checks the twins agree.
    return asKvReply(reply, op.name) as R;
  }

  /** Every primary answers (a cluster's too: a down primary makes its slots unavailable). */
  async ping(): Promise<void> {
    if (!this.clustered) {
      asString(await this.send(["PING"]), "PING");
      return;
    }
    await this.link.firstAttempt;
    const primaries = this.link.primaries();
    if (primaries.length === 0) {
      const lastError = this.link.lastError;
      throw new Error(`${this.link.where} unavailable${lastError ? ` (${describeError(lastError)})` : ""}: no primary known`);
    }
    await Promise.all(
      primaries.map(async (primary) => asString(await this.bounded(["PING"], primary.deadline, () => primary.send(["PING"])), "PING")),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A graceful close waits for the pending replies: only worth it while Redis answers,
    // and bounded like a command (past the bound the silent-connection timeout drops the socket).
    const deadline = this.link.deadlineFor(undefined);
    if (this.link.isReady && !deadline.stalled) {
      await deadline.wait("close", () => this.link.close(true)).catch(() => this.link.close(false));
    } else {
      await this.link.close(false).catch(() => {});
    }
  }

  private shaOf(op: AtomicOp<KvReply>): string {
    const known = this.scripts.get(op.name);
    if (known) {
      if (known.lua !== op.lua) throw new Error(`two different atomic ops are named "${op.name}"`);
      return known.sha;
    }
    const sha = createHash("sha1").update(op.lua).digest("hex");
    this.scripts.set(op.name, { lua: op.lua, sha });
    return sha;
  }

  /** The stored name of a command's first key: it routes the command on a cluster and picks its reply bound. */
  private firstKey(args: string[]): string | undefined {
    const name = args[0];
    if (name === "PING" || name === "SCAN") return undefined;
    if (name === "EVALSHA" || name === "EVAL") return Number(args[2]) > 0 ? args[3] : undefined;
    return args[1];
  }

  private async send(args: string[]): Promise<unknown> {
    const key = this.firstKey(args);
    // The first connection attempt is inside the bound too: against a frozen Redis it settles only when the socket gives up.
    return await this.bounded(args, this.link.deadlineFor(key), async () => {
      await this.link.firstAttempt;
      return await this.link.send(args, key);
    });
  }

  private async bounded(args: string[], deadline: ReplyDeadline, send: () => Promise<unknown>): Promise<unknown> {
    try {
      return await deadline.wait(args[0], send);
    } catch (error) {
      if (error instanceof ClientOfflineError || error instanceof ClientClosedError) {
        const lastError = this.link.lastError;
        const state = this.closed ? "closed" : `unavailable${lastError ? ` (${describeError(lastError)})` : ""}`;
        throw new Error(`${this.link.where} ${state}: ${args[0]} not sent`, { cause: error });
      }
      // Not connected yet and still trying (a Sentinel client retries a refused AUTH for many
      // seconds): the reply deadline is what ends the wait, but the connection error says why.
      const lastError = this.link.lastError;
      if (error instanceof RedisNoReplyError && !this.link.isReady && lastError) {
        throw new RedisNoReplyError(`${error.message}; not connected: ${describeError(lastError)}`, { cause: error });
      }
      throw error;
    }
  }
}
