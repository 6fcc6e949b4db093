/**
 * Identity, access policies and model visibility as a user meets them
 * (docs/design.md#access-policies, docs/design.md#model-visibility,
 * docs/design.md#identity-and-access, docs/design.md#metrics and docs/design.md#errors): the real
 * gateway process (Node, or Deno when the suite runs on Deno) on Redis and S3, in front of the fake
 * backend of test/fixtures/access-backend.ts, with a JWKS endpoint of our own for oauth2.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AccessBackend, startAccessBackend } from "../fixtures/access-backend.ts";
import { type JwksServer, startJwksServer } from "../fixtures/jwks-server.ts";
import { exitCode, type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { newSigningKey, type SigningKey, signToken, type TokenOptions } from "../support/jwt.ts";
import { metricValue } from "../support/prometheus.ts";
import { storesYaml } from "../support/stores-yaml.ts";

interface ErrorBody {
  error: { message: string; type: string };
}
interface ModelList {
  object: string;
  data: Array<{ id: string; service_type: string }>;
}

let backend: AccessBackend;
beforeAll(async () => {
  backend = await startAccessBackend();
});
afterAll(async () => {
  await backend?.close();
});

const running: GatewayProcess[] = [];
async function start(yaml: string, options?: Parameters<typeof startGateway>[1]): Promise<GatewayProcess> {
  const proc = await startGateway(yaml, options);
  running.push(proc);
  return proc;
}
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
});

/** Production stores: quota windows live in Redis, shared by every replica. */
const stores = () => `
${storesYaml({ bucket: "gateway-test" })}
`;

/** A chat model on the LLM path; `extra` lines are indented as service keys. */
const chatModel = (model: string, extra = "") => `
  - type: acc-chat
    model: ${model}
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    inference_url: ${backend.url}
    swagger_url: ${backend.url}/openapi/${model}.json${extra}`;

type Headers = Record<string, string>;

async function chat(gw: GatewayProcess, model: string, headers: Headers = {}): Promise<Response> {
  return await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
}

async function status(response: Response): Promise<number> {
  await response.body?.cancel();
  return response.status;
}

async function submitJob(gw: GatewayProcess, type: string, model: string, headers: Headers = {}): Promise<Response> {
  const form = new FormData();
  form.append("model", model);
  form.append("file", new Blob(["input"], { type: "text/plain" }), "input.txt");
  return await fetch(`${gw.url}/jobs/${type}`, { method: "POST", headers, body: form });
}

async function metrics(gw: GatewayProcess): Promise<string> {
  return await (await fetch(`${gw.url}/metrics`)).text();
}

/** The gateway's JSON log lines with this event name. */
function events(gw: GatewayProcess, name: string): Array<Record<string, unknown>> {
  return gw
    .output()
    .split("\n")
    .filter((line) => line.includes(`"event":"${name}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("start refusals", () => {
  it("exits non-zero naming the path of each access misconfiguration", async () => {
    const cases: Array<[string, string]> = [
      ["policies:\n  rules: []\nservices: []\n", "policies: set, but auth.mode is none; set auth.mode to proxy or oauth2"],
      [
        "services:\n  - type: chat\n    model: m\n    visibility: { groups: [ml] }\n",
        "services[0].visibility.groups: needs auth.mode proxy or oauth2",
      ],
      ["auth:\n  mode: oauth2\nservices: []\n", "auth.oauth2: set jwks_url (the issuer's JWKS endpoint) or keys (inline public JWKs)"],
      [
        "auth:\n  mode: proxy\npolicies:\n  rules:\n    - allow_models: ['m[z-a]']\nservices: []\n",
        'policies.rules[0].allow_models: invalid glob "m[z-a]"',
      ],
      [
        "auth:\n  mode: proxy\npolicies:\n  rules:\n    - allow_models: ['*']\n      limits: { rate: 5, period: 0s }\nservices: []\n",
        "policies.rules[0].limits.period: must be positive when rate is set",
      ],
    ];
    const procs = await Promise.all(cases.map(([yaml]) => start(yaml, { noWait: true })));
    for (const [index, proc] of procs.entries()) {
      expect(await exitCode(proc), cases[index][1]).not.toBe(0);
      expect(proc.output()).toContain(cases[index][1]);
    }
  });
});

describe("proxy identity, policies, quotas and visibility", () => {
  let gw: GatewayProcess;
  // Rules in the order of the config; each test uses callers of its own, since quota
  // windows live in the shared Redis.
  const policies = (defaultDecision: "deny" | "allow") => `
policies:
  default: ${defaultDecision}
  rules:
    - match: {}
      allow_models: [acc-public, acc-premium, acc-ml, acc-ocr, acc-ocr-hidden]
    - match: { groups: [g-team] }
      allow_models: ["acc-ga-*"]
    - match: { roles: [r-admin] }
      allow_models: ["acc-g?-2"]
    - match: { scopes: [s-write] }
      allow_models: ["acc-g[a-c]-x"]
    - match: { consumers: [c-carol] }
      allow_models: ["acc-g[!a]-*"]
    - match: { user_types: [u-gold] }
      allow_models: [acc-ga-1]
    - match: { groups: [and-g], roles: [and-r] }
      allow_models: ["*"]
    - match: { groups: [echo-users] }
      allow_models: ["*"]
      allow_service_types: ["acc-ech?"]
    - match: { groups: [trial] }
      allow_models: [acc-quota]
      limits: { rate: 2, period: 1m }
    - match: { groups: [metered] }
      allow_models: [acc-quota]
      limits: { token_rate: 100, token_period: 1h }
`;
  const config = (defaultDecision: "deny" | "allow" = "deny") =>
    `${stores()}
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
auth:
  mode: proxy
  proxy:
    groups_header: X-Groups
    roles_header: X-Roles
    scopes_header: X-Scopes
${policies(defaultDecision)}
services:${chatModel("acc-public")}${chatModel("acc-premium", "\n    visibility: { user_types: [premium] }")}${
      chatModel("acc-ml", "\n    visibility: { groups: [ml] }")
    }${chatModel("acc-ga-1")}${chatModel("acc-gb-2")}${chatModel("acc-gc-x")}${chatModel("acc-quota")}
  - type: acc-echo
    model: acc-echo
    operations: { run: [/v1/acc-echo] }
    inference_url: ${backend.url}
  - type: acc-ocr
    model: acc-ocr
    default: true
    operations: { read: [/infer] }
    inference_url: ${backend.url}
  - type: acc-ocr
    model: acc-ocr-hidden
    operations: { read: [/infer] }
    inference_url: ${backend.url}
    visibility: { user_types: [premium] }
`;

  beforeAll(async () => {
    gw = await startGateway(config());
  });
  afterAll(async () => {
    await gw?.kill();
  });

  it("takes the identity from the proxy's headers: each match field grants its own models", async () => {
    // groups (any of), with a * glob
    expect(await status(await chat(gw, "acc-ga-1", { "x-groups": "other, g-team" }))).toBe(200);
    expect(await status(await chat(gw, "acc-gb-2", { "x-groups": "g-team" }))).toBe(403);
    // roles, with a ? glob
    expect(await status(await chat(gw, "acc-gb-2", { "x-roles": "r-admin" }))).toBe(200);
    expect(await status(await chat(gw, "acc-ga-1", { "x-roles": "r-admin" }))).toBe(403);
    // scopes, with a [a-c] class
    expect(await status(await chat(gw, "acc-gc-x", { "x-scopes": "read s-write" }))).toBe(200);
    expect(await status(await chat(gw, "acc-gb-2", { "x-scopes": "s-write" }))).toBe(403);
    // consumers (exact), with a [!a] negated class
    expect(await status(await chat(gw, "acc-gb-2", { "x-consumer": "c-carol" }))).toBe(200);
    expect(await status(await chat(gw, "acc-gc-x", { "x-consumer": "c-carol" }))).toBe(200);
    expect(await status(await chat(gw, "acc-ga-1", { "x-consumer": "c-carol" }))).toBe(403);
    expect(await status(await chat(gw, "acc-gb-2", { "x-consumer": "c-carol2" }))).toBe(403);
    // user types (exact), with a literal
    expect(await status(await chat(gw, "acc-ga-1", { "x-user-type": "u-gold" }))).toBe(200);
    expect(await status(await chat(gw, "acc-gb-2", { "x-user-type": "u-gold" }))).toBe(403);
    // AND of two fields
    expect(await status(await chat(gw, "acc-gb-2", { "x-groups": "and-g", "x-roles": "and-r" }))).toBe(200);
    expect(await status(await chat(gw, "acc-gb-2", { "x-groups": "and-g" }))).toBe(403);
    expect(await status(await chat(gw, "acc-gb-2", { "x-roles": "and-r" }))).toBe(403);
    // an empty match: everyone, anonymous callers included
    expect(await status(await chat(gw, "acc-public"))).toBe(200);
  });

  it("matches allow_service_types globs against the service type", async () => {
    const echo = (headers: Headers) =>
      fetch(`${gw.url}/v1/acc-echo`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: "{}" });
    expect(await status(await echo({ "x-groups": "echo-users" }))).toBe(200);
    expect(await status(await chat(gw, "acc-ga-1", { "x-groups": "echo-users" }))).toBe(403);
    expect(await status(await echo({ "x-groups": "g-team" }))).toBe(403);
  });

  it("answers a denial with 403 before any backend work, logs a security event and counts the decision", async () => {
    const before = backend.paths.length;
    const denied = await chat(gw, "acc-ga-1", { "x-consumer": "dave", "x-user-type": "free", "x-groups": "sales", "x-roles": "viewer", "x-scopes": "read" });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as ErrorBody).error).toEqual({
      type: "permission_error",
      message: 'access denied: no access policy allows this caller to use model "acc-ga-1" (service type "acc-chat"); ask the gateway operator for a grant',
      code: "forbidden",
    });
    expect(backend.paths.length).toBe(before);
    await waitUntil(() => events(gw, "security_denied").some((e) => (e.principal as { consumer?: string }).consumer === "dave"));
    const event = events(gw, "security_denied").find((e) => (e.principal as { consumer?: string }).consumer === "dave");
    expect(event).toMatchObject({
      level: "warn",
      principal: { consumer: "dave", user_type: "free", groups: ["sales"], roles: ["viewer"], scopes: ["read"], authenticated: true },
      model: "acc-ga-1",
      service_type: "acc-chat",
      outcome: 'rules [0] match the caller but none grants model "acc-ga-1" of service type "acc-chat"',
    });
    const text = await metrics(gw);
    expect(metricValue(text, "svc_authz_decisions_total", { service_type: "acc-chat", model: "acc-ga-1", decision: "deny" })).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, "svc_authz_decisions_total", { service_type: "acc-chat", model: "acc-public", decision: "allow" })).toBeGreaterThanOrEqual(1);
  });

  it("applies policies to job submissions too", async () => {
    expect(await status(await submitJob(gw, "acc-ocr", "acc-ocr", { "x-consumer": "erin" }))).toBe(202);
    const denied = await submitJob(gw, "acc-echo", "acc-echo", { "x-consumer": "erin" });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as ErrorBody).error.type).toBe("permission_error");
  });

  it("gives each member of a group with limits its own request rate on the LLM path", async () => {
    const frank = { "x-consumer": "frank", "x-groups": "trial" };
    expect(await status(await chat(gw, "acc-quota", frank))).toBe(200);
    expect(await status(await chat(gw, "acc-quota", frank))).toBe(200);
    const limited = await chat(gw, "acc-quota", frank);
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(((await limited.json()) as ErrorBody).error).toEqual({
      type: "rate_limit_error",
      message: "group quota of policies.rules[8] exceeded: 2 requests per 1m; retry after the window resets",
      code: "rate_limit_exceeded",
    });
    // Another member has a budget of their own; anonymous members are not limited.
    expect(await status(await chat(gw, "acc-quota", { "x-consumer": "grace", "x-groups": "trial" }))).toBe(200);
    for (let i = 0; i < 3; i++) expect(await status(await chat(gw, "acc-quota", { "x-groups": "trial" }))).toBe(200);
  });

  it("counts each member's tokens from the LLM answers and refuses once the group budget is spent", async () => {
    const heidi = { "x-consumer": "heidi", "x-groups": "metered" };
    // 50 tokens per answer against a budget of 100: the answer that reaches it passes, a later request is refused.
    expect(await status(await chat(gw, "acc-quota", heidi))).toBe(200);
    expect(await status(await chat(gw, "acc-quota", heidi))).toBe(200);
    let refused: Response | undefined;
    await waitUntil(async () => {
      const response = await chat(gw, "acc-quota", heidi);
      if (response.status === 429) refused = response;
      else expect(await status(response)).toBe(200);
      return refused !== undefined;
    });
    expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThan(3500);
    expect(((await refused?.json()) as ErrorBody).error.message).toBe(
      "group token quota of policies.rules[9] exceeded: 100 tokens per 1h; retry after the window resets",
    );
    expect(await status(await chat(gw, "acc-quota", { "x-consumer": "ivan", "x-groups": "metered" }))).toBe(200);
  });

  describe("hidden models", () => {
    const anonymous: Headers = {};
    const outsider: Headers = { "x-consumer": "judy", "x-user-type": "free", "x-groups": "sales" };
    const premium: Headers = { "x-consumer": "ken", "x-user-type": "premium" };
    const ml: Headers = { "x-consumer": "lena", "x-groups": "ml" };

    async function listed(headers: Headers): Promise<string[]> {
      const response = await fetch(`${gw.url}/v1/models`, { headers });
      expect(response.status).toBe(200);
      return ((await response.json()) as ModelList).data.map((m) => m.id);
    }

    it("are left out of GET /v1/models for anonymous and non-audience callers, and listed for the audience", async () => {
      for (const caller of [anonymous, outsider]) {
        const ids = await listed(caller);
        expect(ids).toContain("acc-public");
        expect(ids).not.toContain("acc-premium");
        expect(ids).not.toContain("acc-ml");
        expect(ids).not.toContain("acc-ocr-hidden");
      }
      expect(await listed(premium)).toEqual(expect.arrayContaining(["acc-public", "acc-premium", "acc-ocr-hidden"]));
      expect(await listed(premium)).not.toContain("acc-ml");
      expect(await listed(ml)).toEqual(expect.arrayContaining(["acc-public", "acc-ml"]));
    });

    it("answer GET /v1/models?model= with the unknown-model 404", async () => {
      const unknown = await fetch(`${gw.url}/v1/models?model=acc-nonexistent`);
      expect(unknown.status).toBe(404);
      const unknownBody = (await unknown.json()) as ErrorBody;
      for (const caller of [anonymous, outsider]) {
        const hidden = await fetch(`${gw.url}/v1/models?model=acc-premium`, { headers: caller });
        expect(hidden.status).toBe(404);
        const body = (await hidden.json()) as ErrorBody;
        expect(body.error.type).toBe(unknownBody.error.type);
        expect(body.error.message).toBe(unknownBody.error.message.replace("acc-nonexistent", "acc-premium"));
      }
      const visible = await fetch(`${gw.url}/v1/models?model=acc-premium`, { headers: premium });
      expect(visible.status).toBe(200);
      expect(await visible.json()).toEqual({ id: "acc-premium", object: "model", owned_by: "access-backend" });
    });

    it("answer POST /v1/* with a 404 worded like an unknown model, never 403, and never reach the backend", async () => {
      const before = backend.paths.length;
      for (const caller of [anonymous, outsider]) {
        for (const model of ["acc-premium", "acc-ml"]) {
          const hidden = await chat(gw, model, caller);
          expect(hidden.status).toBe(404);
          const body = (await hidden.json()) as ErrorBody;
          expect(body.error.type).toBe("not_found_error");
          expect(body.error.message).toMatch(new RegExp(`^model "${model}" is not available on /v1/chat/completions; available models: `));
          expect(body.error.message).not.toMatch(/available models: .*acc-(premium|ml)/);
        }
      }
      expect(backend.paths.length).toBe(before);
      expect(await status(await chat(gw, "acc-premium", premium))).toBe(200);
      expect(await status(await chat(gw, "acc-ml", ml))).toBe(200);
      expect(await status(await chat(gw, "acc-ml", premium))).toBe(404);
    });

    it("answer POST /jobs/{type} with the job route's unknown-model 404", async () => {
      for (const caller of [anonymous, outsider]) {
        const hidden = await submitJob(gw, "acc-ocr", "acc-ocr-hidden", caller);
        expect(hidden.status).toBe(404);
        expect(await hidden.json()).toEqual({
          error: {
            type: "not_found_error",
            message: 'model "acc-ocr-hidden" is not available for service type "acc-ocr"; available models: acc-ocr',
            code: "model_not_found",
          },
        });
      }
      expect(await status(await submitJob(gw, "acc-ocr", "acc-ocr-hidden", premium))).toBe(202);
    });

    it("are left out of GET /openapi.yaml and their per-model docs answer 404", async () => {
      const openapi = async (headers: Headers) => {
        const response = await fetch(`${gw.url}/openapi.yaml`, { headers });
        expect(response.status).toBe(200);
        return await response.text();
      };
      for (const caller of [anonymous, outsider]) {
        const text = await openapi(caller);
        expect(text).toContain("acc-public");
        expect(text).not.toContain("acc-premium");
        expect(text).not.toContain("acc-ocr-hidden");
        for (const prefix of ["/docs/spec", "/swagger"]) {
          expect(await status(await fetch(`${gw.url}${prefix}/acc-chat/acc-premium`, { headers: caller }))).toBe(404);
        }
      }
      expect(await openapi(premium)).toContain("acc-premium");
      for (const prefix of ["/docs/spec", "/swagger"]) {
        expect(await status(await fetch(`${gw.url}${prefix}/acc-chat/acc-premium`, { headers: premium }))).toBe(200);
      }
    });

    it("are counted in svc_model_hidden_total", async () => {
      await chat(gw, "acc-premium").then(status);
      const text = await metrics(gw);
      expect(metricValue(text, "svc_model_hidden_total", { service_type: "acc-chat", model: "acc-premium" })).toBeGreaterThanOrEqual(1);
      expect(metricValue(text, "svc_model_hidden_total", { service_type: "acc-ocr", model: "acc-ocr-hidden" })).toBeGreaterThanOrEqual(1);
      expect(metricValue(text, "svc_model_hidden_total", { service_type: "acc-chat", model: "acc-public" })).toBe(0);
    });
  });

  it("with default: allow, allows what no rule grants (after a reload)", async () => {
    const deniedBefore = await chat(gw, "acc-ga-1", { "x-consumer": "mallory" });
    expect(deniedBefore.status).toBe(403);
    await deniedBefore.body?.cancel();
    gw.writeConfig(config("allow"));
    const reload = await fetch(`${gw.url}/-/reload`, { method: "POST" });
    expect(reload.status).toBe(200);
    await reload.body?.cancel();
    expect(await status(await chat(gw, "acc-ga-1", { "x-consumer": "mallory" }))).toBe(200);
    expect(await status(await chat(gw, "acc-gb-2"))).toBe(200);
    // Visibility still applies: policies and visibility must both pass.
    expect(await status(await chat(gw, "acc-premium"))).toBe(404);
    gw.writeConfig(config("deny"));
    expect(await status(await fetch(`${gw.url}/-/reload`, { method: "POST" }))).toBe(200);
  });
});

describe("hidden models in automatic model selection (docs/design.md#model-resolution, docs/design.md#model-visibility)", () => {
  let gw: GatewayProcess;
  const service = (type: string, model: string, path: string, extra = "") =>
    `\n  - { type: ${type}, model: ${model}, inference_url: ${backend.url}, operations: { e: ["${path}"] }${extra} }`;
  const staffOnly = ", visibility: { user_types: [staff] }";
  const staff: Headers = { "x-user-type": "staff" };
  const outsider: Headers = { "x-user-type": "free" };

  beforeAll(async () => {
    gw = await startGateway(`${stores()}
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
auth:
  mode: proxy
services:${service("auto-emb", "auto-emb-pub", "/v1/auto-emb")}${service("auto-emb", "auto-emb-staff", "/v1/auto-emb", `, default: true${staffOnly}`)}${
      service("auto-tts", "auto-voice-pub", "/v1/auto-tts")
    }${service("auto-tts", "auto-voice-staff", "/v1/auto-tts", staffOnly)}${service("auto-solo", "auto-solo-staff", "/v1/auto-solo", staffOnly)}
`);
  });
  afterAll(async () => {
    await gw?.kill();
  });

  const post = (path: string, headers: Headers, body: unknown = {}) =>
    fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  async function jobModel(response: Response): Promise<string> {
    expect(response.status).toBe(202);
    return ((await response.json()) as { model: string }).model;
  }

  it("auto-selects the only model the caller may see, on sync paths and job types", async () => {
    // auto-emb: the hidden model is the default; auto-tts: the hidden one is a second candidate.
    for (const path of ["/v1/auto-emb", "/v1/auto-tts"]) {
      const response = await post(path, outsider);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { path: string }).path).toBe(path);
    }
    expect(await jobModel(await submitJob(gw, "auto-emb", "", outsider))).toBe("auto-emb-pub");
    expect(await jobModel(await submitJob(gw, "auto-tts", "", outsider))).toBe("auto-voice-pub");
    // The audience sees both: the default wins, and without one the choice is theirs to make.
    expect(await jobModel(await submitJob(gw, "auto-emb", "", staff))).toBe("auto-emb-staff");
    const ambiguous = await submitJob(gw, "auto-tts", "", staff);
    expect(ambiguous.status).toBe(400);
    expect(((await ambiguous.json()) as ErrorBody).error.message).toBe(
      'several models serve service type "auto-tts" and none is the default; set "model" to one of: auto-voice-pub, auto-voice-staff',
    );
  });

  it("answers a path or type whose every model is hidden like one with no model for the caller: nothing hidden is named", async () => {
    const noRoute = (path: string) => ({ error: { type: "not_found_error", message: `no route for POST ${path}`, code: "no_route" } });
    const missingPath = await post("/v1/auto-nothing", outsider);
    expect(missingPath.status).toBe(404);
    expect(await missingPath.json()).toEqual(noRoute("/v1/auto-nothing"));
    // No model named: nothing to choose from, so nothing serves the path for this caller.
    const unnamed = await post("/v1/auto-solo", outsider, {});
    expect(unnamed.status).toBe(404);
    expect(await unnamed.json()).toEqual(noRoute("/v1/auto-solo"));
    // A model named, hidden or unknown: the unknown model's answer, listing none.
    for (const model of ["auto-solo-staff", "auto-other"]) {
      const hiddenPath = await post("/v1/auto-solo", outsider, { model });
      expect(hiddenPath.status).toBe(404);
      expect(await hiddenPath.json()).toEqual({
        error: { type: "not_found_error", message: `model "${model}" is not available on /v1/auto-solo; available models: (none)`, code: "model_not_found" },
      });
    }
    const unknownType = {
      error: { type: "not_found_error", message: 'unknown service type "auto-solo"; configured types: auto-emb, auto-tts', code: "not_found" },
    };
    for (const model of ["", "auto-solo-staff", "auto-other"]) {
      const response = await submitJob(gw, "auto-solo", model, outsider);
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual(unknownType);
    }
    const missingType = await submitJob(gw, "auto-nosuch", "", outsider);
    expect(await missingType.json()).toEqual({
      error: { type: "not_found_error", message: 'unknown service type "auto-nosuch"; configured types: auto-emb, auto-tts', code: "not_found" },
    });
    // The audience still reaches it.
    expect(await status(await post("/v1/auto-solo", staff))).toBe(200);
    expect(await jobModel(await submitJob(gw, "auto-solo", "", staff))).toBe("auto-solo-staff");
  });

  it("never names a hidden model in an error, and counts requests that name one", async () => {
    const named = await post("/v1/auto-emb", outsider, { model: "auto-emb-staff" });
    expect(await named.json()).toEqual({
      error: {
        type: "not_found_error",
        message: 'model "auto-emb-staff" is not available on /v1/auto-emb; available models: auto-emb-pub',
        code: "model_not_found",
      },
    });
    const job = await submitJob(gw, "auto-tts", "auto-voice-staff", outsider);
    expect(await job.json()).toEqual({
      error: {
        type: "not_found_error",
        message: 'model "auto-voice-staff" is not available for service type "auto-tts"; available models: auto-voice-pub',
        code: "model_not_found",
      },
    });
    const text = await metrics(gw);
    expect(metricValue(text, "svc_model_hidden_total", { service_type: "auto-emb", model: "auto-emb-staff" })).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, "svc_model_hidden_total", { service_type: "auto-tts", model: "auto-voice-staff" })).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, "svc_model_hidden_total", { service_type: "auto-emb", model: "auto-emb-pub" })).toBe(0);
  });
});

describe("oauth2 bearer tokens", () => {
  const ISSUER = "https://idp.example.test/";
  const AUDIENCE = "inference-gateway";
  let jwks: JwksServer;
  let key: SigningKey;
  let impostor: SigningKey;
  let gw: GatewayProcess;

  const config = () =>
    `${stores()}
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
auth:
  mode: oauth2
  # Read only in proxy mode; named here so the test can see oauth2 mode strips them.
  proxy:
    groups_header: X-Groups
    roles_header: X-Roles
    scopes_header: X-Scopes
  oauth2:
    issuer: ${ISSUER}
    audience: ${AUDIENCE}
    jwks_url: ${jwks.jwksUrl}
    clock_skew: 5s
    claims:
      user_type: tier
policies:
  rules:
    - match: { scopes: [chat] }
      allow_models: [acc-public, acc-premium, acc-echo]
    - match: { groups: [trial] }
      allow_models: [acc-quota]
      limits: { rate: 1, period: 1m }
services:${chatModel("acc-public")}${chatModel("acc-premium", "\n    visibility: { user_types: [premium] }")}${chatModel("acc-quota")}
  - type: acc-echo
    model: acc-echo
    operations: { run: [/v1/acc-echo] }
    inference_url: ${backend.url}
`;

  beforeAll(async () => {
    [key, impostor] = await Promise.all([newSigningKey("kid-1"), newSigningKey("kid-1")]);
    jwks = await startJwksServer([key.jwk]);
    gw = await startGateway(config());
  });
  afterAll(async () => {
    await gw?.kill();
    await jwks?.close();
  });

  const token = (claims: Record<string, unknown>, options: TokenOptions = {}, signer: SigningKey = key) =>
    signToken(signer, { scope: "chat models:read", ...claims }, { issuer: ISSUER, audience: AUDIENCE, ...options });
  const bearer = (value: string): Headers => ({ authorization: `Bearer ${value}` });

  async function expectInvalid(response: Response, description: string) {
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(`Bearer error="invalid_token", error_description="${description}"`);
    expect(await response.json()).toEqual({ error: { type: "authentication_error", message: `invalid bearer token: ${description}`, code: "unauthorized" } });
  }

  it("accepts a valid token and answers 401 with a Bearer challenge without one", async () => {
    expect(await status(await chat(gw, "acc-public", bearer(await token({ sub: "alice" }))))).toBe(200);
    await expectInvalid(await chat(gw, "acc-public"), "missing bearer token; send Authorization: Bearer <JWT>");
    await expectInvalid(await chat(gw, "acc-public", { "x-consumer": "alice" }), "missing bearer token; send Authorization: Bearer <JWT>");
    // Every request that goes through the pipeline needs the token; the ops endpoints stay open.
    expect((await fetch(`${gw.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${gw.url}/v1/models`, { headers: bearer(await token({ sub: "alice" })) })).status).toBe(200);
    expect((await fetch(`${gw.url}/health`)).status).toBe(200);
    expect((await fetch(`${gw.url}/metrics`)).status).toBe(200);
  });

  it("never forwards the caller's bearer token to the backend", async () => {
    const before = backend.authorizations.length;
    expect(await status(await chat(gw, "acc-public", bearer(await token({ sub: "alice" }))))).toBe(200);
    const sent = backend.authorizations.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((value) => value === "")).toBe(true);
  });

  it("refuses an expired token, a wrong audience and a wrong signature", async () => {
    const hourAgo = Date.now() - 3_600_000;
    await expectInvalid(
      await chat(gw, "acc-public", bearer(await token({ sub: "alice" }, { now: hourAgo, expiresAt: Math.floor(Date.now() / 1000) - 60 }))),
      "the token has expired",
    );
    await expectInvalid(
      await chat(gw, "acc-public", bearer(await token({ sub: "alice" }, { audience: "someone-else" }))),
      "the token audience (aud) is not this gateway's audience",
    );
    await expectInvalid(await chat(gw, "acc-public", bearer(await token({ sub: "alice" }, {}, impostor))), "the token signature does not verify");
  });

  it("accepts a token signed with a rotated key once the issuer publishes it", async () => {
    // The gateway has fetched the key set already (the tests above); now the issuer rotates.
    expect(await status(await chat(gw, "acc-public", bearer(await token({ sub: "alice" }))))).toBe(200);
    const fetchesBefore = jwks.fetches;
    const rotated = await newSigningKey("kid-2");
    jwks.setKeys([rotated.jwk]);
    const fresh = await token({ sub: "alice" }, {}, rotated);
    // An unknown kid refetches the set, at most once per short cooldown: poll, no sleeps.
    await waitUntil(async () => (await status(await chat(gw, "acc-public", bearer(fresh)))) === 200, 15_000);
    expect(jwks.fetches).toBeGreaterThan(fetchesBefore);
  });

  it("takes identity from the token only: headers cannot override consumer or user type", async () => {
    const current = await newSigningKey("kid-3");
    jwks.setKeys([current.jwk]);
    const sign = (claims: Record<string, unknown>) => token(claims, {}, current);
    const free = await sign({ sub: "nick", tier: "free" });
    await waitUntil(async () => (await status(await chat(gw, "acc-public", bearer(free)))) === 200, 15_000);
    // The user type header does not reveal a hidden model.
    expect(await status(await chat(gw, "acc-premium", { ...bearer(free), "x-user-type": "premium" }))).toBe(404);
    expect(await status(await chat(gw, "acc-premium", bearer(await sign({ sub: "olga", tier: "premium" }))))).toBe(200);
    // The token's consumer is the one quotas count, whatever the consumer header says.
    const pat = await sign({ sub: "pat", groups: ["trial"] });
    const quinn = await sign({ sub: "quinn", groups: "trial" });
    expect(await status(await chat(gw, "acc-quota", { ...bearer(pat), "x-consumer": "someone-else" }))).toBe(200);
    expect(await status(await chat(gw, "acc-quota", { ...bearer(pat), "x-consumer": "another-one" }))).toBe(429);
    expect(await status(await chat(gw, "acc-quota", { ...bearer(quinn), "x-consumer": "pat" }))).toBe(200);
    // Scopes come from the token too: without the chat scope no rule grants acc-public.
    expect(await status(await chat(gw, "acc-public", { ...bearer(await sign({ sub: "rob", scope: "models:read" })), "x-consumer": "alice" }))).toBe(403);
  });

  /** A key of its own, published and accepted (earlier tests rotate the issuer's keys). */
  async function publishedKey(kid: string): Promise<SigningKey> {
    const signer = await newSigningKey(kid);
    jwks.setKeys([signer.jwk]);
    const probe = await token({ sub: "probe" }, {}, signer);
    await waitUntil(async () => (await status(await chat(gw, "acc-public", bearer(probe)))) === 200, 15_000);
    return signer;
  }

  it("refuses a valid token that names no consumer, whatever the request, so no token bypasses limits or usage", async () => {
    const signer = await publishedKey("kid-4");
    const description = "the token names no consumer: its sub claim is missing or empty (auth.oauth2.claims.consumer names the consumer claim)";
    const nameless = await token({ groups: ["trial"] }, {}, signer);
    const calls: Array<() => Promise<Response>> = [
      () => chat(gw, "acc-quota", bearer(nameless)),
      () => chat(gw, "acc-quota", bearer(nameless)),
      () => fetch(`${gw.url}/usage`, { headers: bearer(nameless) }),
      () => fetch(`${gw.url}/jobs`, { headers: bearer(nameless) }),
      () => fetch(`${gw.url}/v1/models`, { headers: { ...bearer(nameless), "x-consumer": "alice" } }),
    ];
    for (const call of calls) await expectInvalid(await call(), description);
    // The same token with a consumer is limited as usual (rate 1 per minute).
    const named = await token({ sub: "sam", groups: ["trial"] }, {}, signer);
    expect(await status(await chat(gw, "acc-quota", bearer(named)))).toBe(200);
    expect(await status(await chat(gw, "acc-quota", bearer(named)))).toBe(429);
    expect(await status(await fetch(`${gw.url}/usage`, { headers: bearer(named) }))).toBe(200);
  });

  it("tells backends the verified identity, never the identity headers the client sent", async () => {
    const signer = await publishedKey("kid-5");
    const spoofed: Headers = { "x-consumer": "mallory", "x-user-type": "premium", "x-groups": "admins", "x-roles": "root", "x-scopes": "all" };
    const withType = await token({ sub: "tina", tier: "gold" }, {}, signer);
    const withoutType = await token({ sub: "uma" }, {}, signer);
    const echo = (headers: Headers) =>
      fetch(`${gw.url}/v1/acc-echo`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: "{}" });
    const requests: Array<[() => Promise<Response>, Record<string, string>]> = [
      // sync direct proxy
      [() => echo({ ...spoofed, ...bearer(withType) }), { "x-consumer": "tina", "x-user-type": "gold" }],
      [() => echo({ ...spoofed, ...bearer(withoutType) }), { "x-consumer": "uma" }],
      // LLM proxy
      [() => chat(gw, "acc-public", { ...spoofed, ...bearer(withType) }), { "x-consumer": "tina", "x-user-type": "gold" }],
      // a model's own entry, fetched from its backend
      [() => fetch(`${gw.url}/v1/models?model=acc-public`, { headers: { ...spoofed, ...bearer(withoutType) } }), { "x-consumer": "uma" }],
    ];
    for (const [request, expected] of requests) {
      const before = backend.identities.length;
      expect(await status(await request())).toBe(200);
      expect(backend.identities.slice(before)).toEqual([expected]);
      expect(backend.authorizations.at(-1)).toBe("");
    }
  });
});
