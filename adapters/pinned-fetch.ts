/**
 * An HTTP request that connects only to addresses the caller already vetted (webhook
 * deliveries, see plugins/webhooks/attempt.ts). The URL's host name is not resolved again:
 * the socket's lookup answers the vetted addresses, so a name that resolves to a public
 * address for the check and to 127.0.0.1 a moment later (DNS rebinding) still reaches the
 * checked address. The request keeps the name everywhere else: `Host: <name>[:port]` and,
 * for https, the TLS server name (SNI) and the certificate check are for the name.
 *
 * Built on node:http / node:https, whose `lookup` option Node and Deno (its Node
 * compatibility layer) both honour, so both runtimes share this one implementation. It is
 * not the backend client (adapters/node/http-client.ts): a fresh connection per call, no
 * pool (a pooled connection may have been opened to another address), no redirects
 * followed (a 3xx is returned as it is), no content decoding (no Accept-Encoding is sent).
 */
import { type IncomingMessage, request as httpRequest, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Readable } from "node:stream";
import type { PinnedFetch } from "../core/plugins/types.ts";

/** Responses to these carry no body (and a Response with one cannot be constructed). */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for node:net that answers only `addresses`, whatever name it is asked about. */
function pinnedLookup(addresses: readonly string[]) {
  const entries: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) }));
  return (_hostname: string, options: { family?: number | string; all?: boolean }, callback: LookupCallback) => {
    const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : Number(options.family ?? 0);
    const usable = family === 0 ? entries : entries.filter((entry) => entry.family === family);
    if (usable.length === 0) return callback(Object.assign(new Error(`no vetted IPv${family} address`), { code: "ENOTFOUND" }), []);
    if (options.all) return callback(null, usable);
    callback(null, usable[0].address, usable[0].family);
  };
}

function bodyBytes(body: BodyInit | null | undefined): string | Uint8Array | null {
  if (body === null || body === undefined) return null;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError("a pinned request's body must be a string or bytes");
}

function responseOf(message: IncomingMessage, method: string): Response {
  const headers = new Headers();
  for (let i = 0; i < message.rawHeaders.length; i += 2) headers.append(message.rawHeaders[i], message.rawHeaders[i + 1]);
  const status = message.statusCode ?? 0;
  const empty = NULL_BODY_STATUS.has(status) || method === "HEAD";
  if (empty) message.resume();
  const body = empty ? null : (Readable.toWeb(message) as ReadableStream<Uint8Array>);
  return new Response(body, { status, statusText: message.statusMessage ?? "", headers });
}

/** Connects to one of `addresses` for `url`; rejects as fetch does (TypeError "fetch failed", the cause attached). */
export const fetchPinned: PinnedFetch = (url, addresses, init = {}) => {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (url.protocol !== "http:" && url.protocol !== "https:") return Promise.reject(new TypeError(`cannot fetch ${url.protocol} URLs`));
  if (addresses.length === 0) return Promise.reject(new TypeError("no address to connect to"));
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const method = (init.method ?? "GET").toUpperCase();
  const body = bodyBytes(init.body);
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => (headers[name] = value));
  // As fetch sends it: the name, with the port unless it is the scheme's default.
  headers.host = url.host;
  const options: RequestOptions & { servername?: string } = {
    hostname,
    port: url.port === "" ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    method,
    headers,
    // One connection for this request only: never a pooled one opened to another address.
    agent: false,
    lookup: pinnedLookup(addresses) as RequestOptions["lookup"],
  };
  // SNI carries names, never addresses (an IP literal URL is checked against the certificate's IPs).
  if (url.protocol === "https:" && isIP(hostname) === 0) options.servername = hostname;
  return new Promise<Response>((resolve, reject) => {
    const outgoing = (url.protocol === "https:" ? httpsRequest : httpRequest)(options, (message) => {
      signal?.removeEventListener("abort", onAbort);
      // An abort after the head arrived ends the body, as fetch does.
      signal?.addEventListener("abort", () => message.destroy(signal.reason), { once: true });
      resolve(responseOf(message, method));
    });
    const onAbort = () => outgoing.destroy(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    outgoing.on("error", (error) => {
      signal?.removeEventListener("abort", onAbort);
      reject(signal?.aborted ? signal.reason : new TypeError("fetch failed", { cause: error }));
    });
    outgoing.end(body ?? undefined);
  });
};
