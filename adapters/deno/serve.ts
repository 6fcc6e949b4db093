/**
 * `Deno.serve` on a parsed listen address. An address without a host (":8080") listens on
 * every interface over IPv6 and IPv4, as Node does: on "::", whose IPv6 socket also takes IPv4
 * connections (as ::ffff:a.b.c.d) where the system allows it (Linux's default,
 * net.ipv6.bindv6only=0); on "0.0.0.0" when the host has no IPv6, Node's fallback too.
 */
import type { ListenAddress } from "../../core/config/addr.ts";

type Options = Omit<Deno.ServeTcpOptions, "hostname" | "port">;

export function serveOn(listen: ListenAddress, options: Options, handler: Deno.ServeHandler<Deno.NetAddr>): Deno.HttpServer<Deno.NetAddr> {
  if (listen.hostname !== undefined) return Deno.serve({ ...options, hostname: listen.hostname, port: listen.port }, handler);
  try {
    return Deno.serve({ ...options, hostname: "::", port: listen.port }, handler);
  } catch {
    // Whatever failed on IPv6 (no IPv6 at all, or the port taken), IPv4 alone is what is left;
    // a port taken there too is reported by the caller.
    return Deno.serve({ ...options, hostname: "0.0.0.0", port: listen.port }, handler);
  }
}
