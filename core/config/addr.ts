/**
 * The listen address format of `server.addr` (and the `GATEWAY_ADDR` / `PORT` overrides):
 * ":8080" (all interfaces, IPv6 and IPv4), "127.0.0.1:9000", "[::1]:9000". Checked by config validation, so
 * a start and a reload refuse the same values; the adapters only read the parsed result.
 */
export interface ListenAddress {
  /** undefined = all interfaces, IPv6 and IPv4 (the adapters listen on "::") */
  hostname?: string;
  port: number;
}

/** The parsed address, or undefined when `addr` is not host:port or :port with a port 0-65535. */
export function parseListenAddress(addr: string): ListenAddress | undefined {
  const at = addr.lastIndexOf(":");
  const host = at > 0 ? addr.slice(0, at).replace(/^\[|\]$/g, "") : "";
  const portText = at >= 0 ? addr.slice(at + 1) : addr;
  // Digits only: Number("") is 0 and Number(" 8080") is 8080, neither of which was meant.
  if (!/^\d{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port > 65535) return undefined;
  return { hostname: host === "" ? undefined : host, port };
}

export function listenAddressProblem(key: string, addr: string): string {
  return `${key}: "${addr}" is not host:port or :port (e.g. ":8080" or "127.0.0.1:8080", port 0-65535)`;
}
