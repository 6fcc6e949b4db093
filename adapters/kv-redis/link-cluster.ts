/**
 * A Redis Cluster (`redis.cluster.addrs`), on node-redis's own Cluster client: it learns the
 * slot map from the listed nodes, follows MOVED/ASK redirections and rediscovers the map when
 * a primary fails over, so a primary restart or failover heals without a restart.
 *
 * Each primary has its own reply bound: a frozen primary makes the commands for its slots
 * fail fast (deadline.ts) while the others keep answering. node-redis gives up its first
 * connect when no listed node answers, so the link keeps retrying it in the background.
 */
import { createCluster, RootNodesUnavailableError } from "redis";
import { parseHostPort } from "./address.ts";
import { ReplyDeadline } from "./deadline.ts";
import { asError, type LinkOptions, PING_INTERVAL_MS, reconnectDelay, type RedisLink, socketOptions } from "./link.ts";
import { keySlot } from "./slot.ts";

export class ClusterLink implements RedisLink {
  readonly where: string;
  readonly firstAttempt: Promise<void>;
  lastError: Error | undefined;
  private cluster: ReturnType<typeof createCluster>;
  private readonly deadlines = new Map<string, ReplyDeadline>();
  private closed = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly nodes: string[],
    private readonly options: LinkOptions,
  ) {
    this.where = `Redis Cluster at ${nodes.join(",")}`;
    this.cluster = this.open();
    this.firstAttempt = this.connect(0);
  }

  private open(): ReturnType<typeof createCluster> {
    const options = this.options;
    const cluster = createCluster({
      rootNodes: this.nodes.map((node) => ({ socket: parseHostPort(node) })),
      defaults: {
        username: options.username,
        password: options.password,
        disableOfflineQueue: true,
        pingInterval: PING_INTERVAL_MS,
        socket: socketOptions(options),
      },
    });
    const report = (error: unknown) => {
      this.lastError = asError(error);
      options.onError(this.lastError);
    };
    cluster.on("error", report);
    cluster.on("node-error", report);
    cluster.on("node-ready", (node: { host: string; port: number }) => {
      this.lastError = undefined;
      this.deadlines.get(`${node.host}:${node.port}`)?.reset();
    });
    return cluster;
  }

  private async connect(attempt: number): Promise<void> {
    try {
      await this.cluster.connect();
      this.lastError = undefined;
    } catch (error) {
      const failure = asError(error);
      // node-redis's "All the root nodes are unavailable" does not say why; each root node's
      // own error (a refused certificate, NOAUTH, a refused connection) was reported just before.
      this.lastError = failure instanceof RootNodesUnavailableError && this.lastError ? this.lastError : failure;
      this.options.onError(failure);
      this.cluster.destroy();
      if (this.closed) return;
      this.cluster = this.open();
      this.retryTimer = setTimeout(() => void this.connect(attempt + 1), reconnectDelay(this.options.maxReconnectDelayMs)(attempt));
    }
  }

  get isReady(): boolean {
    return this.cluster.isOpen;
  }

  /** The bound of the primary serving the key's slot (one shared bound for keyless commands or before the map is known). */
  deadlineFor(key: string | undefined): ReplyDeadline {
    let address = "any";
    if (key !== undefined && this.cluster.isOpen) {
      try {
        address = this.cluster.getSlotMaster(keySlot(key))?.address ?? address;
      } catch {
        // The slot map is not known yet.
      }
    }
    return this.deadlineAt(address);
  }

  private deadlineAt(address: string): ReplyDeadline {
    let deadline = this.deadlines.get(address);
    if (!deadline) {
      deadline = new ReplyDeadline(this.options.commandTimeoutMs, address === "any" ? this.where : `Redis Cluster primary ${address}`);
      this.deadlines.set(address, deadline);
    }
    return deadline;
  }

  async send(args: string[], key: string | undefined): Promise<unknown> {
    if (!this.cluster.isOpen) throw new Error(`${this.where} unavailable${this.lastError ? ` (${this.lastError.message})` : ""}: ${args[0]} not sent`);
    return await this.cluster.sendCommand(key, false, args);
  }

  primaries() {
    return this.cluster.masters.map((master) => ({
      address: master.address,
      deadline: this.deadlineAt(master.address),
      send: async (args: string[]): Promise<unknown> => {
        const client = await this.cluster.nodeClient(master);
        return await client.sendCommand(args);
      },
    }));
  }

  async close(graceful: boolean): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    if (!this.cluster.isOpen) return;
    if (graceful) await this.cluster.close();
    else this.cluster.destroy();
  }
}
