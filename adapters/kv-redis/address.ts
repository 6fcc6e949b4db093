/** Turns a configured Redis address into a `redis://` URL node-redis accepts. */

const DEFAULT_PORT = 6379;

/**
 * Accepts `redis://…` / `rediss://…` URLs unchanged, and `host:port`, `[ipv6]:port` or
 * a bare host (port 6379) as the shorthand operators usually write.
 */
export function redisUrlFromAddr(addr: string): string {
  const trimmed = addr.trim();
  if (/^rediss?:\/\//i.test(trimmed)) return trimmed;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    throw new Error(`unsupported Redis address "${addr}": only redis:// and rediss:// URLs`);
  }
  const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:/@[\]]+)(?::(\d{1,5}))?$/.exec(trimmed);
  if (!match) throw new Error(`invalid Redis address "${addr}": expected host:port or a redis:// URL`);
  return `redis://${match[1]}:${match[2] ?? DEFAULT_PORT}`;
}

/** host:port of a Redis URL without credentials, for error messages and logs. */
export function describeRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || DEFAULT_PORT}`;
  } catch {
    return "redis";
  }
}

/** A `host:port` (or `[ipv6]:port`) node address, as the sentinel and cluster lists take. */
export function parseHostPort(addr: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:/@[\]]+)):(\d{1,5})$/.exec(addr.trim());
  if (!match) throw new Error(`invalid Redis node address "${addr}": expected host:port`);
  return { host: match[1] ?? match[2], port: Number(match[3]) };
}
