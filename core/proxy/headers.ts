/** Header rules for requests forwarded to backends (spec 2.8 `inference_headers`, RFC 9110 hop-by-hop). */

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "te", "trailer", "host", "content-length"]);

function isHopByHop(name: string): boolean {
  return HOP_BY_HOP.has(name) || name.startsWith("proxy-");
}

/**
 * Client headers minus hop-by-hop ones (and `host`/`content-length`, which the HTTP client
 * sets for the outgoing request), plus any names the client's `Connection` header lists,
 * then `inject` overriding same-named client headers.
 */
export function forwardHeaders(client: Headers, inject: Readonly<Record<string, string>> = {}, drop: readonly string[] = []): Headers {
  const listed = new Set((client.get("connection") ?? "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean));
  const out = new Headers();
  client.forEach((value, name) => {
    if (isHopByHop(name) || listed.has(name) || drop.includes(name)) return;
    out.set(name, value);
  });
  for (const [name, value] of Object.entries(inject)) out.set(name, value);
  return out;
}

/** Backend response headers safe to pass back to the client. */
export function responseHeaders(backend: Headers): Headers {
  const out = new Headers();
  backend.forEach((value, name) => {
    if (isHopByHop(name) || name === "content-encoding") return;
    out.set(name, value);
  });
  return out;
}
