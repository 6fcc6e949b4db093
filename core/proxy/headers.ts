/**
 * Header rules for requests forwarded to backends (`inference_headers` in docs/design.md#services,
 * RFC 9110 hop-by-hop).
 */

// `expect` too: the gateway's own server answers `100-continue` to the client, and a
// forwarded `expect` makes Node's fetch refuse the request (curl sends it on uploads > 1 MB).
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "te", "trailer", "host", "content-length", "expect"]);

function isHopByHop(name: string): boolean {
  return HOP_BY_HOP.has(name) || name.startsWith("proxy-");
}

/**
 * Client headers minus hop-by-hop ones (and `host`/`content-length`, which the HTTP client
 * sets for the outgoing request), plus any names the client's `Connection` header lists,
 * with `rewrite` (the request context's `backendHeaders`) replacing or removing client
 * headers, then `inject` overriding same-named client headers. A plain record (lower-case
 * names): what every HTTP client takes, without building a `Headers` per request.
 */
export function forwardHeaders(
  client: Headers,
  inject: Readonly<Record<string, string>> = {},
  drop: readonly string[] = [],
  rewrite?: Readonly<Record<string, string | null>>,
): Record<string, string> {
  const connection = client.get("connection");
  const listed = connection ? new Set(connection.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean)) : undefined;
  // No prototype: a client header named like an Object property stays an ordinary entry.
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  client.forEach((value, name) => {
    if (isHopByHop(name) || listed?.has(name) || drop.includes(name)) return;
    if (rewrite && Object.hasOwn(rewrite, name)) return;
    out[name] = value;
  });
  if (rewrite) {
    for (const name in rewrite) {
      const value = rewrite[name];
      if (value !== null) out[name] = value;
    }
  }
  for (const name in inject) out[name.toLowerCase()] = inject[name];
  return out;
}

/**
 * Backend response headers safe to pass back to the client, plus `extra`. A plain record
 * (servers write it as is), except when the backend sets cookies: each `Set-Cookie` must
 * stay its own header, which only `Headers` can hold.
 */
export function responseHeaders(backend: Headers, extra?: Readonly<Record<string, string>>): Headers | Record<string, string> {
  let out: Record<string, string> = Object.create(null) as Record<string, string>;
  let cookies = false;
  backend.forEach((value, name) => {
    if (isHopByHop(name) || name === "content-encoding") return;
    if (name === "set-cookie") cookies = true;
    else out[name] = value;
  });
  if (extra) out = Object.assign(out, extra);
  if (!cookies) return out;
  const headers = new Headers(out);
  for (const cookie of backend.getSetCookie()) headers.append("set-cookie", cookie);
  return headers;
}
