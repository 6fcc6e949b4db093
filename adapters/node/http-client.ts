/**
 * The gateway's outbound HTTP client on Node: `fetch` semantics on `undici.request` with
 * pooled keep-alive connections. The core takes it through `GatewayOptions.fetch`, so plugins
 * keep calling `api.fetch` and stay runtime-agnostic; Deno keeps its own (native) fetch.
 *
 * Why: Node 20's fetch costs about 5x `undici.request`'s CPU per call, and node:http about
 * 1.3x under load (`node dist/bench/http-clients.js`; bench/README.md "Where the time goes"). Fetch
 * turns every body into a web stream (10-25 µs each to build on Node 20) and runs the whole
 * WHATWG request machinery per call. Here a byte body is written as is, and a response body
 * becomes a web stream only if someone reads `.body`; `arrayBuffer()`/`text()`/`json()` read
 * the connection's stream directly.
 *
 * Handled here: http/https URLs given as a string or URL; string, bytes, ReadableStream or no
 * body; `redirect: "manual"` (the 3xx is returned) or `"error"`; `signal`; gzip/deflate/br
 * answers decoded as fetch does (the same `accept-encoding` is offered). Anything else
 * (a `Request` object, redirects to follow, form or blob bodies) goes to the runtime's fetch
 * unchanged, so behaviour never depends on which path a call took.
 *
 * No header or body timeouts of the client's own (undici's default is 300 s each): the
 * gateway bounds the wait for headers itself (`server.backend_timeout`), and a stream may
 * pause as long as its backend likes. Idle pooled connections close before the usual
 * backend keep-alive timeouts (5 s) can close them under a request, and undici also honours
 * a backend's `Keep-Alive: timeout=N` hint.
 */
import { createRequire } from "node:module";
import { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import type { Agent as UndiciAgent, Dispatcher } from "undici";
import { IncomingResponse } from "./incoming-response.ts";

export interface NodeFetchOptions {
  /**
   * Idle keep-alive connections are closed after this long (ms), before the usual backend
   * keep-alive timeouts (5 s for Node and most servers) can close them under a request.
   */
  idleTimeoutMs?: number;
  /** Where calls this client does not handle go (default: the runtime's fetch). */
  fallback?: typeof fetch;
}

type Body = Uint8Array | ReadableStream<Uint8Array> | null;

/** Responses to these carry no body (and a Response with one cannot be constructed). */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);
const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);

const encoder = new TextEncoder();

function bodyOf(body: BodyInit | null | undefined): Body | undefined {
  if (body === null || body === undefined) return null;
  if (typeof body === "string") return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (body instanceof ReadableStream) return body as ReadableStream<Uint8Array>;
  // FormData, Blob, URLSearchParams, DataView...: the runtime's fetch knows their encodings.
  return undefined;
}

/** Request headers as a plain record (lower-case names); a repeated name keeps every value, comma-joined as Headers does. */
function plainHeaders(init: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (init === undefined) return out;
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    out[key] = key in out ? `${out[key]}, ${value}` : value;
  };
  if (init instanceof Headers) init.forEach((value, name) => add(name, value));
  else if (Array.isArray(init)) { for (const [name, value] of init) add(name, value); }
  else for (const name of Object.keys(init)) add(name, String((init as Record<string, string>)[name]));
  return out;
}

function fetchFailed(cause: unknown): TypeError {
  return new TypeError("fetch failed", { cause });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/** The body as fetch hands it over: decoded when the server compressed it. */
function decoded(body: Readable, contentEncoding: string | string[] | undefined): Readable {
  const encoding = String(contentEncoding ?? "").trim().toLowerCase();
  const decoder = encoding === "gzip" || encoding === "x-gzip"
    ? createGunzip()
    : encoding === "deflate"
    ? createInflate()
    : encoding === "br"
    ? createBrotliDecompress()
    : undefined;
  if (!decoder) return body;
  body.on("error", (error) => decoder.destroy(error));
  return body.pipe(decoder);
}

/**
 * The answer's headers into the response's (repeats kept, each appended). Appended one by one
 * rather than given to the constructor: Node 20's Response converts a `headers` init through
 * WebIDL (for a pair list, an array and an index label string per pair): ~4.9 KB for 5 headers,
 * appended ~0.6 KB (measured).
 */
function appendHeaders(target: Headers, headers: Record<string, string | string[] | undefined>): void {
  for (const name in headers) {
    const value = headers[name];
    if (typeof value === "string") target.append(name, value);
    else if (value) { for (const one of value) target.append(name, one); }
  }
}

/**
 * A web stream body as the Node stream undici writes from. Nothing is read from it before
 * undici starts writing, which is after the connection is up: a refused connection then has
 * taken no chunk, and the caller's failover can resend it whole. A request that ends early
 * (aborted, connection lost) cancels it.
 */
function nodeBody(stream: ReadableStream<Uint8Array>): Readable {
  async function* chunks() {
    const reader = stream.getReader();
    let finished = false;
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) break;
        yield value;
      }
      finished = true;
    } finally {
      if (!finished) await reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}

// Only undici's connection pool and its `request`, not the package's index: that also loads
// its fetch, WebSocket, cache and mocks, ~13 MB of resident memory (measured) the gateway
// never uses; these two cost ~4.5 MB. The package has no exports map, and `undici` is pinned
// to one minor version in package.json so the paths cannot move under us unnoticed.
const require = createRequire(import.meta.url);
const Agent = require("undici/lib/dispatcher/agent.js") as typeof UndiciAgent;
const request = require("undici/lib/api/api-request.js") as (this: Dispatcher, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;

export function createNodeFetch(options: NodeFetchOptions = {}): typeof fetch {
  const idle = options.idleTimeoutMs ?? 4000;
  const agent = new Agent({ keepAliveTimeout: idle, keepAliveMaxTimeout: idle, headersTimeout: 0, bodyTimeout: 0 });
  const fallback = options.fallback ?? ((input, init) => globalThis.fetch(input, init));

  async function send(url: URL, method: string, headers: Record<string, string>, body: Body, init: RequestInit): Promise<Response> {
    const signal = init.signal ?? undefined;
    if (signal?.aborted) throw abortReason(signal);
    let answer: Dispatcher.ResponseData;
    try {
      answer = await request.call(agent, {
        origin: url.origin,
        path: url.pathname + url.search,
        method: method as Dispatcher.HttpMethod,
        headers,
        body: body instanceof ReadableStream ? nodeBody(body) : body,
        // undici keeps listening until the body is fully read: aborting then errors the body.
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      // An invalid header name or value, a refused or reset connection: as fetch reports them.
      throw fetchFailed(error);
    }
    const status = answer.statusCode;
    const refusedRedirect = REDIRECT_STATUS.has(status) && init.redirect === "error" && answer.headers.location !== undefined;
    const empty = NULL_BODY_STATUS.has(status) || method === "HEAD";
    if (refusedRedirect || empty) {
      // A body nobody will read: its error (a reset connection; undici reports a destroy()
      // itself as an abort) must not go unobserved, which would be an uncaught error. A body
      // that is handed over gets that listener from IncomingResponse.
      answer.body.on("error", () => {});
      if (refusedRedirect) {
        answer.body.destroy();
        throw fetchFailed(new Error(`unexpected redirect to ${String(answer.headers.location)}`));
      }
      answer.body.resume();
    }
    const source = empty ? null : decoded(answer.body, answer.headers["content-encoding"]);
    const response = new IncomingResponse(source, { status, statusText: answer.statusText ?? "" });
    appendHeaders(response.headers, answer.headers);
    return response;
  }

  return async function nodeFetch(input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> {
    if (input instanceof Request || (init.redirect !== "manual" && init.redirect !== "error")) return await fallback(input, init);
    const body = bodyOf(init.body);
    if (body === undefined) return await fallback(input, init);
    let url: URL;
    try {
      url = input instanceof URL ? input : new URL(input);
    } catch (error) {
      throw new TypeError(`invalid URL: ${String(input)}`, { cause: error });
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return await fallback(input, init);
    const method = (init.method ?? "GET").toUpperCase();
    if (body !== null && (method === "GET" || method === "HEAD")) throw new TypeError("a GET or HEAD request cannot have a body");
    const headers = plainHeaders(init.headers);
    headers["accept-encoding"] ??= url.protocol === "https:" ? "br, gzip, deflate" : "gzip, deflate";
    return await send(url, method, headers, body, init);
  };
}
