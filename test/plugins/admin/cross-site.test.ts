/**
 * Cross-site requests to `/-/*` (CSRF): what a browser sends for a page of another site
 * (`Sec-Fetch-Site: cross-site` or `same-site`; without it, an `Origin` other than the
 * gateway's own) is refused with a 403 on every admin route of a gateway with every built-in
 * plugin, with the admin token or without; the gateway's own pages, what the user opens
 * (`none`, a link followed to a page), and clients that are not browsers pass.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Gateway } from "../../../core/gateway.ts";
import { adminRoutes, closeGateways, everything, gateway, send } from "./harness.ts";

afterEach(closeGateways);

interface ErrorBody {
  error: { message: string; type: string };
}

async function refusedAsCrossSite(response: Response): Promise<boolean> {
  if (response.status !== 403) {
    await response.body?.cancel();
    return false;
  }
  const body = (await response.json()) as ErrorBody;
  expect(body.error.type).toBe("permission_error");
  return body.error.message.startsWith("cross-site request refused");
}

const CROSS_SITE: Array<Record<string, string>> = [
  { "sec-fetch-site": "cross-site", origin: "http://evil.example" },
  { "sec-fetch-site": "same-site", origin: "http://gateway:8081" },
  // A browser that does not send Sec-Fetch-Site: its Origin decides.
  { origin: "http://evil.example" },
  { origin: "http://gateway:8081" },
  { origin: "https://gateway" },
  { origin: "null" },
];

const PASSING: Array<Record<string, string>> = [
  {},
  { "sec-fetch-site": "same-origin", origin: "http://gateway" },
  { "sec-fetch-site": "none" },
  { origin: "http://gateway" },
  { origin: "http://GATEWAY:80" },
  // A proxy in front rewrote Host: the browser's own verdict still says same-origin.
  { "sec-fetch-site": "same-origin", origin: "https://gateway.example.com" },
];

describe.each([
  { name: "without admin.token", admin: "", auth: {} as Record<string, string> },
  { name: "with admin.token", admin: "admin: { token: t0ken }", auth: { authorization: "Bearer t0ken" } },
])("cross-site requests to /-/*, $name", ({ admin, auth }) => {
  async function walk(gw: Gateway, headers: Record<string, string>): Promise<string[]> {
    const refused: string[] = [];
    for (const { method, path } of adminRoutes(gw)) {
      if (await refusedAsCrossSite(await send(gw, method, path, { ...auth, ...headers }))) refused.push(`${method} ${path}`);
    }
    return refused;
  }

  it("every admin route refuses what a browser sends for another site's page, with a 403 saying why", async () => {
    const gw = await gateway(everything(admin));
    const routes = adminRoutes(gw).map(({ method, path }) => `${method} ${path}`);
    expect(routes).toEqual(
      expect.arrayContaining(["POST /-/reload", "POST /-/jobs/purge", "POST /-/webhooks/deadletter/redeliver", "POST /-/keys", "GET /-/config"]),
    );
    for (const headers of CROSS_SITE) expect(await walk(gw, headers), JSON.stringify(headers)).toEqual(routes);

    const answer = await send(gw, "POST", "/-/reload", { ...auth, origin: "http://evil.example" });
    expect(answer.status).toBe(403);
    expect(await answer.json()).toEqual({
      error: {
        type: "permission_error",
        code: "forbidden",
        message:
          "cross-site request refused: Origin http://evil.example is not this gateway's own (http://gateway); admin endpoints answer only the gateway's own pages (the console) and clients that are not browsers (curl, scripts)",
      },
    });
    const marked = (await (await send(gw, "POST", "/-/jobs/purge", { ...auth, "sec-fetch-site": "cross-site" })).json()) as ErrorBody;
    expect(marked.error.message).toMatch(/^cross-site request refused: the browser marked it Sec-Fetch-Site: cross-site /);
  });

  it("the gateway's own pages, the user's own navigation and clients without Origin pass", async () => {
    const gw = await gateway(everything(admin));
    for (const headers of PASSING) expect(await walk(gw, headers), JSON.stringify(headers)).toEqual([]);
    const reload = await send(gw, "POST", "/-/reload", { ...auth, "sec-fetch-site": "same-origin", origin: "http://gateway" });
    expect(await reload.json()).toMatchObject({ status: "reloaded" });
  });

  it("a link on another site opens an admin page (a top-level GET), and nothing else gets through that way", async () => {
    const gw = await gateway(everything(admin));
    const navigate = { ...auth, "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" };
    expect((await send(gw, "GET", "/-/console", navigate)).status).toBe(200);
    expect((await send(gw, "GET", "/-/config", navigate)).status).toBe(200);
    // A form posted from another site is a navigation too, but a POST.
    expect(await refusedAsCrossSite(await send(gw, "POST", "/-/reload", navigate))).toBe(true);
    // The same page in a frame of another site's page, or fetched by it.
    expect(await refusedAsCrossSite(await send(gw, "GET", "/-/console", { ...navigate, "sec-fetch-dest": "iframe" }))).toBe(true);
    expect(
      await refusedAsCrossSite(
        await send(gw, "GET", "/-/config", { ...auth, "sec-fetch-site": "cross-site", "sec-fetch-mode": "cors", "sec-fetch-dest": "empty" }),
      ),
    ).toBe(true);
  });

  it("the rest of the gateway is not concerned: /health, /metrics and the API take cross-site requests as before", async () => {
    const gw = await gateway(everything(admin));
    for (const path of ["/health", "/metrics", "/v1/models"]) {
      const response = await send(gw, "GET", path, { "sec-fetch-site": "cross-site", origin: "http://evil.example" });
      expect(await refusedAsCrossSite(response), path).toBe(false);
    }
  });
});
