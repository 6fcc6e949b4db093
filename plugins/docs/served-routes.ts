/**
 * Which of the gateway's optional endpoints this runtime serves, read from the routes the
 * plugins registered, so the document never describes an endpoint a disabled plugin left out.
 */
import type { Hono } from "hono";
import type { Method } from "../../core/openapi/types.ts";

/** `/jobs/:type/:id{[0-9a-f-]+}` and `/jobs/{service_type}/{id}` both become `/jobs/{}/{}`. */
function shape(path: string): string {
  return path
    .replace(/:[A-Za-z0-9_]+(\{[^}]*\})?\??/g, "{}")
    .replace(/\{[A-Za-z0-9_]+\}/g, "{}");
}

export function servedRoutes(app: Hono): (method: Method, template: string) => boolean {
  return (method, template) => {
    const wanted = shape(template);
    return app.routes.some((route) => {
      // Catch-alls (middleware, the sync proxy's `*`) serve nothing by themselves.
      if (route.path === "*" || route.path === "/*") return false;
      return (route.method === "ALL" || route.method === method.toUpperCase()) && shape(route.path) === wanted;
    });
  };
}
