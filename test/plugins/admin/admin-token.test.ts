/**
 * The admin token (docs/api-keys.md): with `admin.token` set, every `/-/*` route a gateway with all
 * built-in plugins registers answers 401 without it (the test walks the route table, so a
 * new admin route cannot be forgotten), and works with it; `/health` and `/metrics` stay
 * open unless `admin.protect_metrics`. Without a token, one warning names the open endpoints.
 */
import { afterEach, describe, expect, it } from "vitest";
import { builtinPlugins } from "../../../plugins/index.ts";
import { adminRoutes, closeGateways, everything, gateway, send } from "./harness.ts";

afterEach(closeGateways);

describe("admin.token set", () => {
  it("every /-/ route of the route table answers 401 without the token, and is reached with it", async () => {
    const gw = await gateway(everything("admin: { token: t0ken }", true));
    expect(gw.runtime.activePlugins.length).toBe(builtinPlugins.length);
    const routes = adminRoutes(gw);
    // The walk covers the admin routes of every plugin, the core's reload included.
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(["POST /-/reload", "POST /-/keys", "DELETE /-/keys/x", "POST /-/jobs/purge", "GET /-/usage", "GET /-/backends"]),
    );
    // The only routes let through: the console's page and scripts, which hold no data (a
    // browser loads them before the token is typed in). A new exemption must be added here.
    // The page itself answers 401 without the token (with its token form as the body).
    const open = ["GET /-/console", "GET /-/console/app.js", "GET /-/console/app.css"];
    for (const route of open) {
      const [method, path] = route.split(" ");
      const res = await send(gw, method, path);
      expect(res.status, route).toBe(path === "/-/console" ? 401 : 200);
      expect(await res.text()).not.toContain("t0ken");
    }
    expect((await send(gw, "GET", "/-/console", { authorization: "Bearer t0ken" })).status).toBe(200);
    for (const { method, path } of routes) {
      if (open.includes(`${method} ${path}`)) continue;
      for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "t0ken" }] as Array<Record<string, string>>) {
        const res = await send(gw, method, path, headers);
        expect(res.status, `${method} ${path} with ${JSON.stringify(headers)}`).toBe(401);
        const body = (await res.json()) as { error: { message: string; type: string } };
        expect(body.error.type).toBe("authentication_error");
        expect(body.error.message).toContain("admin token");
      }
      const allowed = await send(gw, method, path, { authorization: "Bearer t0ken" });
      expect(allowed.status, `${method} ${path} with the token`).not.toBe(401);
      await allowed.body?.cancel();
    }
  });

  it("spellings that routers may normalise are guarded too", async () => {
    const gw = await gateway(everything("admin: { token: t0ken }"));
    for (const path of ["/v1/../-/usage", "/%2D/usage", "/-/usage?x=1"]) expect((await send(gw, "GET", path)).status, path).not.toBe(200);
    expect((await send(gw, "GET", "/%2D/usage")).status).toBe(401);
    // An open path does not open what a router reaches through it.
    for (const path of ["/-/console/../usage", "/-/console/%2E%2E/usage"]) expect((await send(gw, "GET", path)).status, path).toBe(401);
  });

  it("/health and /metrics stay open; admin.protect_metrics guards /metrics", async () => {
    const open = await gateway(everything("admin: { token: t0ken }"));
    expect((await send(open, "GET", "/health")).status).toBe(200);
    expect((await send(open, "GET", "/metrics")).status).toBe(200);
    const guarded = await gateway(everything("admin: { token: t0ken, protect_metrics: true }"));
    expect((await send(guarded, "GET", "/metrics")).status).toBe(401);
    expect((await send(guarded, "GET", "/metrics", { authorization: "Bearer t0ken" })).status).toBe(200);
    expect((await send(guarded, "GET", "/health")).status).toBe(200);
  });
});

describe("admin.token unset", () => {
  it("/-/* stays open (spec) and one warning at start names the open endpoints", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const gw = await gateway(everything(""), lines);
    expect((await send(gw, "GET", "/-/usage")).status).toBe(200);
    const warnings = lines.filter((line) => line.event === "admin_endpoints_open");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.endpoints).toEqual(expect.arrayContaining(["POST /-/reload", "GET /-/backends", "POST /-/keys"]));
  });
});
