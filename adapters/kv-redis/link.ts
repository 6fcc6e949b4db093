/**
 * What the Redis store sends its commands through: one Redis, a Sentinel-managed primary or
 * a Cluster (link-single.ts, link-sentinel.ts, link-cluster.ts). The store (index.ts) owns
 * the command set and the reply bound; a link owns connecting, routing and reconnecting.
 */
import { ReplyDeadline } from "./deadline.ts";

/** TLS to every node (and sentinel). */
export interface RedisTls {
  /** PEM of the CA that signed the node certificates; undefined = the system CAs. */
  ca?: string;
  /** Name certificates are checked against; undefined = each node's host. */
  serverName?: string;
}

/** What every mode shares. */
export interface LinkOptions {
  username?: string;
  password?: string;
  /** Database index (SELECT); one Redis and Sentinel only. */
  db?: number;
  /** Set = TLS (a rediss:// URL turns it on for one Redis as well). */
  tls?: RedisTls;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  maxReconnectDelayMs: number;
  onError: (error: Error) => void;
}

export interface RedisLink {
  /** "Redis at host:port", "Redis Sentinel master NAME", "Redis Cluster at host:port,…": for messages. */
  readonly where: string;
  /** Settles on the first connection attempt's outcome (ready or failed). */
  readonly firstAttempt: Promise<void>;
  /** The last connection error while not connected, for "unavailable (…)" messages. */
  readonly lastError: Error | undefined;
  /** True when a graceful close can wait for pending replies. */
  readonly isReady: boolean;
  /** The reply bound of the node a command with this first key goes to. */
  deadlineFor(key: string | undefined): ReplyDeadline;
  /** Sends one command; `key` (its first key) routes it on a cluster. */
  send(args: string[], key: string | undefined): Promise<unknown>;
  /** Every primary (one except on a cluster), each with its reply bound and a way to send it a keyless command (SCAN, PING). */
  primaries(): { address: string; deadline: ReplyDeadline; send(args: string[]): Promise<unknown> }[];
  close(graceful: boolean): Promise<void>;
}

/** How often an open connection is checked with a PING, ms; its reply keeps a healthy idle connection from looking silent. */
export const PING_INTERVAL_MS = 1_000;

/**
 * A connection on which nothing has been read or written for this long (no reply to the
 * last PING, nor to anything else) is dropped and reopened: behind a network black hole
 * the kernel would otherwise keep it for many minutes. Well above the ping interval and
 * the command bound, so a healthy connection or a slow reply never trips it.
 */
export function silentConnectionMs(commandTimeoutMs: number): number {
  return Math.max(3_000, 4 * commandTimeoutMs);
}

/** Never give up (a number, never false), and jitter so replicas do not reconnect in lockstep. */
export function reconnectDelay(maxDelayMs: number): (retries: number) => number {
  return (retries) => Math.min(50 * 2 ** retries, maxDelayMs) + Math.floor(Math.random() * 100);
}

/** The socket options every node connection gets (TLS included). */
export function socketOptions(options: LinkOptions) {
  const tls = options.tls === undefined ? {} : { tls: true as const, ca: options.tls.ca, servername: options.tls.serverName };
  return {
    connectTimeout: options.connectTimeoutMs,
    socketTimeout: silentConnectionMs(options.commandTimeoutMs),
    reconnectStrategy: reconnectDelay(options.maxReconnectDelayMs),
    ...tls,
  };
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
