/**
 * One Redis (`redis.addr`). The client connects in the background and reconnects forever
 * with capped backoff, so a Redis restart heals without restarting the gateway.
 */
import { createClient } from "redis";
import { describeRedisUrl } from "./address.ts";
import { ReplyDeadline } from "./deadline.ts";
import { asError, type LinkOptions, PING_INTERVAL_MS, type RedisLink, socketOptions } from "./link.ts";

export class SingleLink implements RedisLink {
  readonly where: string;
  readonly firstAttempt: Promise<void>;
  lastError: Error | undefined;
  private readonly client: ReturnType<typeof createClient>;
  private readonly deadline: ReplyDeadline;

  constructor(url: string, options: LinkOptions) {
    this.where = `Redis at ${describeRedisUrl(url)}`;
    this.deadline = new ReplyDeadline(options.commandTimeoutMs, this.where);
    this.client = createClient({
      // node-redis refuses `tls: true` with a redis:// URL: redis.tls.enabled makes it rediss://.
      url: options.tls === undefined ? url : url.replace(/^redis:\/\//i, "rediss://"),
      username: options.username,
      password: options.password,
      database: options.db,
      disableOfflineQueue: true,
      pingInterval: PING_INTERVAL_MS,
      socket: socketOptions(options),
    });
    let settle: () => void = () => {};
    this.firstAttempt = new Promise<void>((resolve) => (settle = resolve));
    // Without an error listener node-redis's EventEmitter would throw and take the process down.
    this.client.on("error", (error: unknown) => {
      this.lastError = asError(error);
      settle();
      options.onError(this.lastError);
    });
    this.client.on("ready", () => {
      this.lastError = undefined;
      this.deadline.reset();
      settle();
    });
    this.client.connect().catch((error: unknown) => {
      this.lastError = asError(error);
      settle();
    });
  }

  get isReady(): boolean {
    return this.client.isReady;
  }

  deadlineFor(): ReplyDeadline {
    return this.deadline;
  }

  send(args: string[]): Promise<unknown> {
    return this.client.sendCommand(args);
  }

  primaries() {
    return [{ address: this.where, deadline: this.deadline, send: (args: string[]) => this.client.sendCommand(args) as Promise<unknown> }];
  }

  async close(graceful: boolean): Promise<void> {
    if (!this.client.isOpen) return;
    if (graceful) await this.client.close();
    else this.client.destroy();
  }
}
