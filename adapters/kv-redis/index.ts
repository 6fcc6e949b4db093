/**
 * The Redis key-value store, on node-redis v5 over RESP2.
 *
 * Availability model: the client connects in the background and reconnects forever
 * with capped backoff, so a Redis restart heals without restarting the gateway. While
 * it is disconnected every command fails at once (`disableOfflineQueue`) instead of
 * queueing: callers get an error they can turn into a 503 rather than a request that
 * hangs until Redis returns.
 *
 * A Redis that keeps the connection open but stops answering (stopped process, network
 * black hole) is bounded too: every command waits at most `commandTimeoutMs` for its reply
 * and fails like any store error (see deadline.ts), and a connection that stays silent
 * despite a PING every second is dropped and reopened (see `silentConnectionMs`).
 */
import { createHash } from "node:crypto";
import { ClientClosedError, ClientOfflineError, createClient } from "redis";
import type { AtomicOp, KvReply, KvStore, ListEnd, ScanPage } from "../../core/stores/kv.ts";
import { describeRedisUrl, redisUrlFromAddr } from "./address.ts";
import { ReplyDeadline } from "./deadline.ts";
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

export interface RedisKvOptions {
  /** `redis://…` / `rediss://…` URL, or `host:port`. */
  url: string;
  password?: string;
  /** Database index (SELECT). */
  db?: number;
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

type Client = ReturnType<typeof createClient>;

const DEFAULT_COMMAND_TIMEOUT_MS = 500;

/** How often an open connection is checked with a PING, ms; its reply keeps a healthy idle connection from looking silent. */
const PING_INTERVAL_MS = 1_000;

/**
 * A connection on which nothing has been read or written for this long (no reply to the
 * last PING, nor to anything else) is dropped and reopened: behind a network black hole
 * the kernel would otherwise keep it for many minutes. Well above the ping interval and
 * the command bound, so a healthy connection or a slow reply never trips it.
 */
function silentConnectionMs(commandTimeoutMs: number): number {
  return Math.max(3_000, 4 * commandTimeoutMs);
}

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
  private readonly client: Client;
  private readonly where: string;
  /** Settles on the first connection attempt's outcome (ready or failed). */
  private readonly firstAttempt: Promise<void>;
  private lastError: Error | undefined;
  private closed = false;
  private readonly scripts = new Map<string, { lua: string; sha: string }>();
  private readonly deadline: ReplyDeadline;

  /** Starts connecting in the background; commands issued before the first attempt settles wait for it. */
  constructor(options: RedisKvOptions) {
    const url = redisUrlFromAddr(options.url);
    this.where = describeRedisUrl(url);
    const maxDelay = options.maxReconnectDelayMs ?? 2_000;
    const commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.deadline = new ReplyDeadline(commandTimeoutMs, `Redis at ${this.where}`);
    this.client = createClient({
      url,
      password: options.password,
      database: options.db,
      disableOfflineQueue: true,
      pingInterval: PING_INTERVAL_MS,
      socket: {
        connectTimeout: options.connectTimeoutMs ?? 5_000,
        socketTimeout: silentConnectionMs(commandTimeoutMs),
        // Never give up (a number, never false), and jitter so replicas do not reconnect in lockstep.
        reconnectStrategy: (retries) => Math.min(50 * 2 ** retries, maxDelay) + Math.floor(Math.random() * 100),
      },
    });
    let settle: () => void = () => {};
    this.firstAttempt = new Promise<void>((resolve) => (settle = resolve));
    // Without an error listener node-redis's EventEmitter would throw and take the process down.
    this.client.on("error", (error: unknown) => {
      this.lastError = error instanceof Error ? error : new Error(String(error));
      settle();
      options.onError?.(this.lastError);
    });
    this.client.on("ready", () => {
      this.lastError = undefined;
      this.deadline.reset();
      settle();
    });
    this.client.connect().catch((error: unknown) => {
      this.lastError = error instanceof Error ? error : new Error(String(error));
      settle();
    });
  }

  /** Connects and checks the server answers; rejects (and cleans up) when it does not. */
  static async connect(options: RedisKvOptions): Promise<RedisKv> {
    const kv = new RedisKv(options);
    try {
      await kv.ping();
    } catch (error) {
      await kv.close();
      throw error;
    }
    return kv;
  }

  async get(key: string): Promise<string | null> {
    return asNullableString(await this.send(["GET", key]), "GET");
  }

  async mget(keys: string[]): Promise<(string | null)[]> {
    if (keys.length === 0) return [];
    return asNullableStringArray(await this.send(["MGET", ...keys]), "MGET");
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    await this.send(ttlMs === undefined ? ["SET", key, value] : ["SET", key, value, "PX", String(ttlMs)]);
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    const args = ["SET", key, value, "NX"];
    if (ttlMs !== undefined) args.push("PX", String(ttlMs));
    return (await this.send(args)) !== null;
  }

  async del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return asInteger(await this.send(["DEL", ...keys]), "DEL");
  }

  async exists(key: string): Promise<boolean> {
    return asInteger(await this.send(["EXISTS", key]), "EXISTS") === 1;
  }

  async incrBy(key: string, by: number): Promise<number> {
    return asInteger(await this.send(["INCRBY", key, String(by)]), "INCRBY");
  }

  async pexpire(key: string, ttlMs: number): Promise<boolean> {
    return asInteger(await this.send(["PEXPIRE", key, String(ttlMs)]), "PEXPIRE") === 1;
  }

  async pttl(key: string): Promise<number> {
    return asInteger(await this.send(["PTTL", key]), "PTTL");
  }

  async hget(key: string, field: string): Promise<string | null> {
    return asNullableString(await this.send(["HGET", key, field]), "HGET");
  }

  async hset(key: string, fields: Record<string, string>): Promise<number> {
    const flat = Object.entries(fields).flat();
    // HSET with no fields is a syntax error in Redis; an empty update is a no-op here.
    if (flat.length === 0) return 0;
    return asInteger(await this.send(["HSET", key, ...flat]), "HSET");
  }

  async hdel(key: string, field: string): Promise<number> {
    return asInteger(await this.send(["HDEL", key, field]), "HDEL");
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    return asRecord(await this.send(["HGETALL", key]), "HGETALL");
  }

  async hincrBy(key: string, field: string, by: number): Promise<number> {
    return asInteger(await this.send(["HINCRBY", key, field, String(by)]), "HINCRBY");
  }

  async hincrByFloat(key: string, field: string, by: number): Promise<number> {
    return parseDouble(asString(await this.send(["HINCRBYFLOAT", key, field, formatDouble(by)]), "HINCRBYFLOAT"));
  }

  async push(key: string, value: string, end: ListEnd): Promise<number> {
    return asInteger(await this.send([end === "head" ? "LPUSH" : "RPUSH", key, value]), "push");
  }

  async pop(key: string, end: ListEnd): Promise<string | null> {
    return asNullableString(await this.send([end === "head" ? "LPOP" : "RPOP", key]), "pop");
  }

  async lrange(key: string, start: number, stop: number): Promise<string[]> {
    return asStringArray(await this.send(["LRANGE", key, String(start), String(stop)]), "LRANGE");
  }

  async lrem(key: string, count: number, value: string): Promise<number> {
    return asInteger(await this.send(["LREM", key, String(count), value]), "LREM");
  }

  async llen(key: string): Promise<number> {
    return asInteger(await this.send(["LLEN", key]), "LLEN");
  }

  async move(from: string, to: string, fromEnd: ListEnd, toEnd: ListEnd): Promise<string | null> {
    return asNullableString(await this.send(["LMOVE", from, to, END[fromEnd], END[toEnd]]), "LMOVE");
  }

  async zadd(key: string, score: number, member: string): Promise<number> {
    return asInteger(await this.send(["ZADD", key, formatDouble(score), member]), "ZADD");
  }

  async zrem(key: string, member: string): Promise<number> {
    return asInteger(await this.send(["ZREM", key, member]), "ZREM");
  }

  async zscore(key: string, member: string): Promise<number | null> {
    const reply = asNullableString(await this.send(["ZSCORE", key, member]), "ZSCORE");
    return reply === null ? null : parseDouble(reply);
  }

  async zcard(key: string): Promise<number> {
    return asInteger(await this.send(["ZCARD", key]), "ZCARD");
  }

  async zrangeByScore(key: string, min: number, max: number, limit?: number): Promise<string[]> {
    const args = ["ZRANGEBYSCORE", key, formatDouble(min), formatDouble(max)];
    if (limit !== undefined) args.push("LIMIT", "0", String(limit));
    return asStringArray(await this.send(args), "ZRANGEBYSCORE");
  }

  async scan(prefix: string, cursor: string, count = 100): Promise<ScanPage> {
    return asScanPage(await this.send(["SCAN", cursor, "MATCH", `${globLiteral(prefix)}*`, "COUNT", String(count)]));
  }

  /**
   * EVALSHA with the SHA computed locally once per op; on NOSCRIPT (first use, or the
   * server restarted and lost its script cache) EVAL runs it and caches it server-side.
   */
  async run<R extends KvReply>(op: AtomicOp<R>, keys: string[], args: (string | number)[]): Promise<R> {
    const tail = [String(keys.length), ...keys, ...args.map(String)];
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

  async ping(): Promise<void> {
    asString(await this.send(["PING"]), "PING");
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.client.isOpen) return;
    // A graceful close waits for the pending replies: only worth it while Redis answers,
    // and bounded like a command (past the bound the silent-connection timeout drops the socket).
    if (this.client.isReady && !this.deadline.stalled) {
      await this.deadline.wait("close", () => this.client.close()).catch(() => {});
    } else {
      this.client.destroy();
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

  private async send(args: string[]): Promise<unknown> {
    try {
      // The first connection attempt is inside the bound too: against a frozen Redis it settles only when the socket gives up.
      return await this.deadline.wait(args[0], async () => {
        await this.firstAttempt;
        return await this.client.sendCommand(args);
      });
    } catch (error) {
      if (error instanceof ClientOfflineError || error instanceof ClientClosedError) {
        const state = this.closed ? "closed" : `unavailable${this.lastError ? ` (${describeError(this.lastError)})` : ""}`;
        throw new Error(`Redis at ${this.where} ${state}: ${args[0]} not sent`, { cause: error });
      }
      throw error;
    }
  }
}
