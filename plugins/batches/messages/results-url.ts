/**
 * The gateway's own origin as the client reached it, for `results_url`: the scheme and the
 * `Host` of the request (the URL the server adapter built from them). Behind a proxy the proxy
 * must pass the Host the client used (nginx: `proxy_set_header Host $host`) and, when it ends
 * TLS, `X-Forwarded-Proto: https`; the first value of that header is taken when it says http or https.
 */
export function originOf(request: Request): string {
  const url = new URL(request.url);
  const forwarded = request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase();
  const scheme = forwarded === "http" || forwarded === "https" ? forwarded : url.protocol.replace(/:$/, "");
  const host = request.headers.get("host") ?? url.host;
  return `${scheme}://${host}`;
}
