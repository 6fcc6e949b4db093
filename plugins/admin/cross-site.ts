/**
 * Refuses admin requests that a browser sends on behalf of a page from another origin (CSRF):
 * with `/-/*` open (no `admin.token`), any page a user of the gateway's network opens could
 * otherwise purge jobs or reload the config through their browser. A browser says where a
 * request comes from, and a page cannot forge it: `Sec-Fetch-Site` (every current browser),
 * else `Origin` (older ones), compared with the request's own scheme and host. A request with
 * neither (curl, scripts, servers) is no browser's and passes. A browser that opens an admin
 * page from a link on another site (a top-level GET) only shows it to its user, so it passes too.
 */
import { errors, type GatewayError } from "../../core/errors.ts";

/** `Sec-Fetch-Site` values of a request the user or the gateway's own pages started. */
const OWN_SITES = new Set(["same-origin", "none"]);

/** A GET or HEAD that opens a page in the browser's window: nothing is changed, nothing leaks to the linking page. */
function opensPage(request: Request): boolean {
  const { method, headers } = request;
  return (method === "GET" || method === "HEAD") && headers.get("sec-fetch-mode") === "navigate" && headers.get("sec-fetch-dest") === "document";
}

/** The origin `value` (an `Origin` header) names, or undefined for `null` and anything unparsable. */
function originOf(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.origin === "null" ? undefined : url.origin;
  } catch {
    return undefined;
  }
}

const REMEDY = "admin endpoints answer only the gateway's own pages (the console) and clients that are not browsers (curl, scripts)";

/** Whether the request carries what a browser says about where it comes from; without it there is nothing to check. */
export function sentByBrowser(headers: Headers): boolean {
  return headers.has("sec-fetch-site") || headers.has("origin");
}

/** The 403 for a cross-site browser request; undefined when the request may go on. */
export function crossSiteRefusal(request: Request): GatewayError | undefined {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) {
    // Decided by the browser, whatever Host a proxy in front rewrote.
    if (OWN_SITES.has(site.trim().toLowerCase()) || opensPage(request)) return undefined;
    return errors.forbidden(
      `cross-site request refused: the browser marked it Sec-Fetch-Site: ${site.slice(0, 40)} (sent by a page from another site); ${REMEDY}`,
    );
  }
  const origin = request.headers.get("origin");
  if (origin === null) return undefined;
  const own = new URL(request.url).origin;
  if (originOf(origin) === own) return undefined;
  return errors.forbidden(`cross-site request refused: Origin ${origin.slice(0, 200)} is not this gateway's own (${own}); ${REMEDY}`);
}
