/**
 * A Sentinel-managed primary (`redis.sentinel`), on node-redis's own Sentinel client: it
 * asks the sentinels for the primary, follows their `+switch-master` announcements and, on a
 * READONLY reply or a lost connection, asks again, so a failover heals without a restart.
 *
 * node-redis gives up its first connect after a few rounds when no sentinel (or no primary)
 * answers, so the link keeps retrying it in the background, like the one-Redis client does.
 */
import { createSentinel } from "redis";
import { parseHostPort } from "./address.ts";
import { ReplyDeadline } from "./deadline.ts";
import { asError, type LinkOptions, PING_INTERVAL_MS, reconnectDelay, type RedisLink, socketOptions } from "./link.ts";

export interface SentinelTarget {
  masterName: string;
  /** host:port of the sentinels. */
  sentinels: string[];
  /** The sentinels' own credentials (the primary's are the link options'). */
  sentinelUsername?: string;
  sentinelPassword?: string;
}

export class SentinelLink implements RedisLink {
  readonly where: string;
  readonly firstAttempt: Promise<void>;
  lastError: Error | undefined;
  private sentinel: ReturnType<typeof createSentinel>;
  private readonly deadline: ReplyDeadline;
  private closed = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(target: SentinelTarget, options: LinkOptions) {
    this.where = `Redis Sentinel primary "${target.masterName}"`;
    this.deadline = new ReplyDeadline(options.commandTimeoutMs, this.where);
    this.sentinel = this.open(target, options);
    this.firstAttempt = this.connect(target, options, 0);
  }

  private open(target: SentinelTarget, options: LinkOptions): ReturnType<typeof createSentinel> {
    const socket = socketOptions(options);
    const sentinel = createSentinel({
      name: target.masterName,
      sentinelRootNodes: target.sentinels.map(parseHostPort),
      nodeClientOptions: {
        username: options.username,
        password: options.password,
        database: options.db,
        disableOfflineQueue: true,
        pingInterval: PING_INTERVAL_MS,
        socket,
      },
      sentinelClientOptions: {
        username: target.sentinelUsername,
        password: target.sentinelPassword,
        // The connection that listens for the sentinels' announcements is quiet for long
        // stretches (and cannot PING while subscribed): no silent-connection timeout on it.
        socket: { ...socket, socketTimeout: undefined },
      },
      // One primary connection held for good, shared (pipelined) by every command. Without it
      // node-redis leases the connection per burst of commands, and a command that arrives
      // while the lease is being taken waits until no command is in flight: under steady
      // load that is never, and the reply deadline then refuses every command for seconds.
      reserveClient: true,
      // Check the topology every few seconds besides the announcements (a missed one heals too).
      scanInterval: 5_000,
      passthroughClientErrorEvents: true,
    });
    sentinel.on("error", (error: unknown) => {
      this.lastError = asError(error);
      options.onError(this.lastError);
    });
    // A new primary (or a reconnected one) has nothing pending from the old connection.
    sentinel.on("topology-change", () => this.deadline.reset());
    return sentinel;
  }

  private async connect(target: SentinelTarget, options: LinkOptions, attempt: number): Promise<void> {
    try {
      await this.sentinel.connect();
      this.lastError = undefined;
    } catch (error) {
      this.lastError = asError(error);
      options.onError(this.lastError);
      // node-redis's Sentinel client cannot connect() twice: retry on a fresh one.
      await this.sentinel.destroy().catch(() => {});
      if (this.closed) return;
      this.sentinel = this.open(target, options);
      this.retryTimer = setTimeout(() => void this.connect(target, options, attempt + 1), reconnectDelay(options.maxReconnectDelayMs)(attempt));
    }
  }

  get isReady(): boolean {
    return this.sentinel.isReady;
  }

  deadlineFor(): ReplyDeadline {
    return this.deadline;
  }

  async send(args: string[]): Promise<unknown> {
    if (!this.sentinel.isReady) throw new Error(`${this.where} unavailable${this.lastError ? ` (${this.lastError.message})` : ""}: ${args[0]} not sent`);
    return await this.sentinel.sendCommand(false, args);
  }

  primaries() {
    return [{ address: this.where, deadline: this.deadline, send: (args: string[]) => this.send(args) }];
  }

  async close(graceful: boolean): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    if (!this.sentinel.isOpen) return;
    if (graceful) await this.sentinel.close();
    else await this.sentinel.destroy();
  }
}
