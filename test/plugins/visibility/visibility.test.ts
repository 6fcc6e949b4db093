/**
 * Model visibility in-process (docs/design.md#model-visibility): hidden models answer 404 like
 * unknown ones, never 403.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../plugins/config.ts";
import { definePlugin } from "../../../core/plugins/types.ts";
import { isVisible } from "../../../plugins/visibility/audience.ts";
import { type AccessRuntime, accessRuntime, metricValue } from "../access-harness.ts";

const open: AccessRuntime[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
});
async function start(yaml: string, options: Parameters<typeof accessRuntime>[1] = {}): Promise<AccessRuntime> {
  const runtime = await accessRuntime(yaml, options);
  open.push(runtime);
  return runtime;
}

const catalog = (auth = "") => `
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
${auth}
services:
  - type: chat
    model: public
    operations: {chat: [/v1/chat/completions]}
  - type: chat
    model: premium-only
    operations: {chat: [/v1/chat/completions]}
    visibility: {user_types: [premium]}
  - type: chat
    model: ml-only
    operations: {chat: [/v1/chat/completions]}
    visibility: {groups: [ml]}
  - type: chat
    model: either
    operations: {chat: [/v1/chat/completions]}
    visibility: {user_types: [staff], groups: [ops]}
`;
const proxyAuth = "auth:\n  mode: proxy\n  proxy:\n    groups_header: X-Groups\n";

const chat = (rt: AccessRuntime, model: string, headers: Record<string, string> = {}) => rt.request("/v1/chat/completions", { headers, body: { model } });

describe("the audience rule", () => {
  const services = loadConfig(catalog(proxyAuth), {}).config.services;
  const byModel = (model: string) => services.find((s) => s.model === model) ?? services[0];
  const who = (userType?: string, groups: string[] = []) => ({ userType, groups, roles: [], scopes: [], authenticated: true });

  it("a service without visibility is public, anonymous callers included", () => {
    expect(isVisible({ groups: [], roles: [], scopes: [], authenticated: false }, byModel("public"))).toBe(true);
  });

  it("a caller is in the audience when the user type or one group matches (union)", () => {
    expect(isVisible(who("premium"), byModel("premium-only"))).toBe(true);
    expect(isVisible(who("free"), byModel("premium-only"))).toBe(false);
    expect(isVisible(who(undefined, ["ops", "ml"]), byModel("ml-only"))).toBe(true);
    expect(isVisible(who("ml"), byModel("ml-only"))).toBe(false);
    expect(isVisible(who("staff"), byModel("either"))).toBe(true);
    expect(isVisible(who(undefined, ["ops"]), byModel("either"))).toBe(true);
    expect(isVisible(who("premium", ["ml"]), byModel("either"))).toBe(false);
    expect(isVisible({ groups: [], roles: [], scopes: [], authenticated: false }, byModel("either"))).toBe(false);
  });
});

describe("hidden models on requests", () => {
  it("answers a hidden model exactly as an unknown one (model_not_found), listing only what the caller may see", async () => {
    const rt = await start(catalog(proxyAuth));
    const hidden = await chat(rt, "premium-only");
    const unknown = await chat(rt, "no-such-model");
    expect(hidden.status).toBe(404);
    expect(unknown.status).toBe(404);
    const hiddenText = await hidden.text();
    expect(JSON.parse(hiddenText)).toEqual({
      error: {
        message: 'model "premium-only" is not available on /v1/chat/completions; available models: public',
        type: "not_found_error",
        code: "model_not_found",
      },
    });
    // Byte for byte, but for the name the caller sent.
    expect((await unknown.text()).replace("no-such-model", "premium-only")).toBe(hiddenText);
    const visible = await chat(rt, "ml-only", { "x-groups": "ml" });
    expect(visible.status).toBe(200);
    expect((await chat(rt, "premium-only", { "x-user-type": "premium" })).status).toBe(200);
  });

  it("lists the models the caller may see in the 404", async () => {
    const rt = await start(catalog(proxyAuth));
    const response = await chat(rt, "premium-only", { "x-groups": "ml,ops" });
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      'model "premium-only" is not available on /v1/chat/completions; available models: public, ml-only, either',
    );
  });

  it("answers async submissions with the job route's wording", async () => {
    const rt = await start(catalog(proxyAuth));
    const response = await rt.request("/jobs/chat?model=ml-only");
    expect(response.status).toBe(404);
    const hiddenText = await response.text();
    expect(JSON.parse(hiddenText)).toEqual({
      error: {
        message: 'model "ml-only" is not available for service type "chat"; available models: public',
        type: "not_found_error",
        code: "model_not_found",
      },
    });
    expect((await (await rt.request("/jobs/chat?model=no-such")).text()).replace("no-such", "ml-only")).toBe(hiddenText);
    expect((await rt.request("/jobs/chat?model=ml-only", { headers: { "x-groups": "ml" } })).status).toBe(200);
  });

  it("works without an auth mode for user types", async () => {
    const rt = await start(catalog().replace(/\n {4}visibility: \{groups: \[ml\]\}|\n {4}visibility: \{user_types: \[staff\], groups: \[ops\]\}/g, ""));
    expect((await chat(rt, "premium-only")).status).toBe(404);
    expect((await chat(rt, "premium-only", { "x-user-type": "premium" })).status).toBe(200);
  });

  it("counts every hidden answer in svc_model_hidden_total", async () => {
    const rt = await start(catalog(proxyAuth));
    await chat(rt, "premium-only");
    await chat(rt, "premium-only", { "x-user-type": "free" });
    await chat(rt, "premium-only", { "x-user-type": "premium" });
    await rt.request("/jobs/chat?model=ml-only");
    const text = await rt.metrics.text();
    expect(metricValue(text, "svc_model_hidden_total", { service_type: "chat", model: "premium-only" })).toBe(2);
    expect(metricValue(text, "svc_model_hidden_total", { service_type: "chat", model: "ml-only" })).toBe(1);
    expect(metricValue(text, "svc_model_hidden_total", { service_type: "chat", model: "public" })).toBe(0);
  });

  it("answers 404, not 403, when a policy would also deny the hidden model", async () => {
    const rt = await start(`${catalog(proxyAuth)}\npolicies:\n  rules:\n    - allow_models: [public]\n`);
    expect((await chat(rt, "premium-only")).status).toBe(404);
    expect((await chat(rt, "premium-only", { "x-user-type": "premium" })).status).toBe(403);
    expect((await chat(rt, "public")).status).toBe(200);
  });

  it("is off when no service has visibility, and offers the audience rule as a service", async () => {
    const plain = await start("services:\n  - type: chat\n    model: a\n    operations: {chat: [/v1/x]}\n");
    expect(plain.runtime.activePlugins).not.toContain("visibility");
    let seen: boolean[] = [];
    const probe = definePlugin({
      name: "visibility-probe",
      dependsOn: ["visibility"],
      setup(api) {
        const visibility = api.use("visibility");
        seen = api.registry.models().map((s) => visibility.isVisible({ userType: "premium", groups: [], roles: [], scopes: [], authenticated: true }, s));
      },
    });
    await start(catalog(proxyAuth), { plugins: [probe] });
    expect(seen).toEqual([true, true, false, false]);
  });
});

describe("visibility start refusals", () => {
  it("refuses visibility.groups without an auth mode, naming the service", () => {
    expect(() => loadConfig(catalog(), {})).toThrow("services[2].visibility.groups: needs auth.mode proxy or oauth2");
    expect(() => loadConfig(catalog(), {})).toThrow("services[3].visibility.groups: needs auth.mode proxy or oauth2");
    expect(() => loadConfig(catalog(proxyAuth), {})).not.toThrow();
  });

  it("refuses policies without an auth mode", () => {
    expect(() => loadConfig("policies:\n  rules: []\n", {})).toThrow("policies: set, but auth.mode is none; set auth.mode to proxy or oauth2");
  });
});
