/**
 * The Node server's own limits, from `server.read_timeout` and `server.idle_timeout`, given
 * when the server is created: Node derives some of them from the others at that moment. And
 * its Host check, left to the gateway.
 */
import type { ServerOptions } from "node:http";
import type { Booted } from "../boot.ts";

/** Node's default time for a request's headers, when the whole request may take longer. */
const HEADERS_TIMEOUT_MS = 60_000;

/**
 * How often Node looks for requests past their time (its default is 30 s, so a 408 could come
 * up to 30 s after `server.read_timeout`). Walking the connection list once a second costs little.
 */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

export function serverOptions(timeouts: Booted["timeouts"]): ServerOptions {
  return {
    requestTimeout: timeouts.read,
    // At most the request timeout: Node times a request whose headers have arrived by the larger
    // of the two, so a longer headers timeout would stretch server.read_timeout for bodies.
    headersTimeout: timeouts.read > 0 ? Math.min(HEADERS_TIMEOUT_MS, timeouts.read) : HEADERS_TIMEOUT_MS,
    keepAliveTimeout: timeouts.idle,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    // Node would answer a request without Host with an empty 400; ./request-listener.ts answers it with the error body.
    requireHostHeader: false,
  };
}
