/**
 * The admin token (`admin.token`): when set, every `/-/*` endpoint, whichever plugin
 * registered it, needs `Authorization: Bearer <token>`; `/health` stays open, `/metrics`
 * too unless `admin.protect_metrics`. Enforced by one middleware that runs before any route
 * (the core's included) and decides by path prefix, not per route, so an admin route added
 * later cannot be left open by forgetting a check. A plugin of its own (not the core)
 * because it owns a config section. With no token the spec's open `/-/*` stays, and each
 * start names the open endpoints in one warning. Either way, `/-/*` refuses what a browser
 * sends for a page from another site (./cross-site.ts).
 */
import type { AdminAccess } from "../../core/admin/access.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { adminSection } from "./config.ts";
import { crossSiteRefusal, sentByBrowser } from "./cross-site.ts";
import { adminTokenRefusal } from "./token.ts";

/** Every spelling of the path a router may act on: as sent, normalised (`..`), percent-decoded. */
export function pathsOf(url: string): string[] {
  const raw = url.replace(/^[a-z]+:\/\/[^/]*/i, "").replace(/[?#].*$/, "");
  const paths = [raw, new URL(url).pathname];
  for (const path of [...paths]) {
    try {
      paths.push(decodeURIComponent(path));
    } catch {
      // Not decodable: no router decodes it either.
    }
  }
  return paths;
}

export function isAdminPath(url: string, protectMetrics: boolean): boolean {
  return pathsOf(url).some((path) => path.startsWith("/-/") || (protectMetrics && path.replace(/\/+$/, "") === "/metrics"));
}

export default definePlugin({
  name: "admin",
  // Inside tracing and the audit log (a refused call is audited), outside everything else.
  layer: "admin-guard",
  section: adminSection,
  setup(api) {
    const { token, protect_metrics: protectMetrics } = api.section;
    const openPaths = new Set<string>();
    const access: AdminAccess = {
      tokenConfigured: token !== "",
      allowWithoutToken: (path) => void openPaths.add(path),
      openPaths,
      accepts: (headers) => token === "" || adminTokenRefusal(headers, token) === undefined,
    };
    api.provide("admin", access);
    // Open only when every spelling a router may act on is an open path: `/-/console/../keys` is not.
    const isOpen = (method: string, url: string) => method === "GET" && pathsOf(url).every((path) => openPaths.has(path));
    // With or without a token: a browser has no business calling /-/* for another site's page.
    // Asked first about the headers, so a request without Origin (most API calls) costs nothing more.
    const crossSite = (request: Request) => (sentByBrowser(request.headers) && isAdminPath(request.url, false) ? crossSiteRefusal(request) : undefined);
    const withoutToken = (request: Request) =>
      token !== "" && isAdminPath(request.url, protectMetrics) && !isOpen(request.method, request.url) ? adminTokenRefusal(request.headers, token) : undefined;
    api.middleware(async function guardAdminEndpoints(c, next) {
      const refusal = crossSite(c.req.raw) ?? withoutToken(c.req.raw);
      if (refusal) return refusal.toResponse();
      await next();
    });
    if (token === "") {
      api.onReady(() => {
        const open = [...new Set(api.routes.routes.filter((route) => route.path.startsWith("/-/")).map((route) => `${route.method} ${route.path}`))];
        api.log.warn("admin_endpoints_open", { endpoints: open, message: "admin.token is not set: these endpoints answer anyone who can reach the port" });
      });
    }
  },
});
