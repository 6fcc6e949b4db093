/**
 * `api.dispatchAs`: a request the gateway sends itself runs through the routes and the pipeline
 * like a client's, as the principal it was given. The identify stage does not run for it, so a
 * header it carries cannot change who it runs as, and its context says it is not a client's.
 * A client request with the same headers is identified as always. Code that runs for it without
 * the request at hand learns its origin from the work scope.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RequestContext } from "../../../core/pipeline/context.ts";
import { definePlugin, type PluginApi } from "../../../core/plugins/types.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const alice = { consumer: "alice", userType: "batch-user", groups: ["g"], roles: [], scopes: [], authenticated: true, keyId: "key-1" };

/** Names the caller from `x-who` (as a proxy auth mode would), and answers who each request ran as. */
const whoami = definePlugin({
  name: "whoami",
  setup(api) {
    api.stage("identify", (ctx) => {
      const who = ctx.request.headers.get("x-who");
      if (who) ctx.principal = { ...ctx.principal, consumer: who };
    });
    const seen = (ctx: RequestContext) => ({ consumer: ctx.principal.consumer, keyId: ctx.principal.keyId, origin: ctx.origin });
    api.routes.get("/whoami", (c) => {
      const ctx = api.newContext(c.req.raw, "sync", "");
      return api.pipeline.run(ctx, { resolve: () => undefined, handle: (ctx) => Response.json(seen(ctx)) });
    });
    api.routes.get("/identify-only", async (c) => {
      const ctx = api.newContext(c.req.raw, "sync", "");
      await api.pipeline.runStage("identify", ctx);
      return Response.json(seen(ctx));
    });
    // Code without the request at hand (pricing an answer) asks the work scope, after an await too.
    api.routes.get("/origin-of-work", async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return Response.json({ origin: api.originOfWork() });
    });
    api.routes.get("/refused", (c) => {
      const ctx = api.newContext(c.req.raw, "sync", "");
      return api.pipeline.run(ctx, { resolve: () => Response.json({ stage: ctx.stage }, { status: 418 }), handle: () => new Response("unreachable") });
    });
  },
});

describe("api.dispatchAs", () => {
  let gw: TestRuntime;
  let api: PluginApi;
  afterEach(async () => {
    await gw.close();
  });
  const start = async () => {
    gw = await startTestRuntime("services: []\n", [whoami], { probe: (probe) => (api = probe) });
  };

  it("runs a request as the given principal, whatever identity headers it carries", async () => {
    await start();
    const client = await gw.request("/whoami", { headers: { "x-who": "mallory" } });
    expect(await client.json()).toEqual({ consumer: "mallory", origin: "client" });

    const dispatched = await api.dispatchAs(alice, new Request("http://gateway/whoami", { headers: { "x-who": "mallory" } }), "batch");
    expect(dispatched.status).toBe(200);
    expect(await dispatched.json()).toEqual({ consumer: "alice", keyId: "key-1", origin: "batch" });

    // A handler that runs the identify stage on its own gets the dispatched principal too.
    const own = await api.dispatchAs(alice, new Request("http://gateway/identify-only", { headers: { "x-who": "mallory" } }), "batch");
    expect(await own.json()).toEqual({ consumer: "alice", keyId: "key-1", origin: "batch" });
    expect(await (await gw.request("/identify-only", { headers: { "x-who": "mallory" } })).json()).toEqual({ consumer: "mallory", origin: "client" });
  });

  it("tells code without the request which origin its work is for", async () => {
    await start();
    expect(await (await gw.request("/origin-of-work")).json()).toEqual({ origin: "client" });
    expect(await (await api.dispatchAs(alice, new Request("http://gateway/origin-of-work"), "batch")).json()).toEqual({ origin: "batch" });
    expect(api.originOfWork()).toBe("client");
  });

  it("tells which stage answered a request", async () => {
    await start();
    const refused = await gw.request("/refused");
    expect(refused.status).toBe(418);
    expect(await refused.json()).toEqual({ stage: "resolve" });
  });
});
