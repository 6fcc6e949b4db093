/**
 * `GET /-/config`: the running config with every secret as "***", by the rules of
 * core/config/redact.ts: named paths (store passwords and keys, the signing secret,
 * header values), names that say secret wherever they sit (a loaded plugin's
 * `admin.token`, `auth.api_key.secret`), and the credentials inside any URL. Settings that
 * merely mention tokens (`token_rate`) and empty secrets ("not set") are shown as they are.
 */
import { describe, expect, it } from "vitest";
import { Type } from "@sinclair/typebox";
import { registerOpsRoutes } from "../../core/ops.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { REDACTED } from "../../core/config/redact.ts";
import webhooks from "../../plugins/webhooks/index.ts";
import { startTestRuntime } from "../support/runtime.ts";

// A stand-in for a section a plugin outside the repository adds: covered by its names.
const apiKeys = definePlugin({
  name: "api-key-standin",
  section: { key: "api_keys_standin", schema: Type.Object({ signing_secret: Type.String({ default: "" }), max_keys: Type.Integer({ default: 10 }) }) },
  setup() {},
});

const yaml = `
redis:
  password: redis-pw
object_store:
  access_key: AKIA123
  secret_key: s3-secret
  encryption:
    key: "${"ab".repeat(32)}"
webhooks:
  signing_secret: whsec
auth:
  mode: oauth2
  oauth2:
    issuer: https://issuer.example.com
    audience: gw
    keys: [{ kty: oct, k: hmac-secret }]
  api_key:
    secret: api-key-hmac-secret
opentelemetry:
  exporter:
    endpoint: https://user:pw@otel.example.com:4318
    headers: { authorization: Bearer otel-token }
admin:
  token: admin-token-value
api_keys_standin:
  signing_secret: key-secret
rate_limits:
  chat:
    "*": { token_rate: 1000, token_period: 1h }
services:
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: https://bob:hunter2@llm.example.com/v1
    inference_headers: { Authorization: Bearer sk-live, X-Team: blue }
    backends:
      - url: https://b1.example.com
        headers: { Authorization: Bearer sk-b1 }
    swagger_url: https://llm.example.com/openapi.json
    swagger_headers: { X-Api-Key: swagger-key }
`;

describe("GET /-/config", () => {
  it("shows the running config with every secret as ***", async () => {
    const gw = await startTestRuntime(yaml, [webhooks, apiKeys]);
    try {
      registerOpsRoutes(gw.runtime, { reload: async () => ({ ok: true, services: 1 }) });
      const response = await gw.request("/-/config");
      expect(response.status).toBe(200);
      const text = await response.text();
      for (
        const secret of [
          "redis-pw",
          "AKIA123",
          "s3-secret",
          "abab",
          "whsec",
          "hmac-secret",
          ":pw@",
          "otel-token",
          "admin-token-value",
          "api-key-hmac-secret",
          "key-secret",
          "hunter2",
          "sk-live",
          "sk-b1",
          "swagger-key",
        ]
      ) {
        expect(text, secret).not.toContain(secret);
      }
      const config = JSON.parse(text);
      expect(config.redis.password).toBe(REDACTED);
      expect(config.object_store).toMatchObject({ access_key: REDACTED, secret_key: REDACTED, encryption: { key: REDACTED } });
      expect(config.webhooks.signing_secret).toBe(REDACTED);
      expect(config.auth.oauth2.keys).toBe(REDACTED);
      expect(config.auth.oauth2.issuer).toBe("https://issuer.example.com");
      expect(config.opentelemetry.exporter).toMatchObject({ endpoint: "https://***@otel.example.com:4318", headers: { authorization: REDACTED } });
      expect(config.admin).toEqual({ token: REDACTED, protect_metrics: false });
      expect(config.auth.api_key.secret).toBe(REDACTED);
      expect(config.api_keys_standin).toEqual({ signing_secret: REDACTED, max_keys: 10 });
      expect(config.rate_limits.chat["*"]).toMatchObject({ token_rate: 1000, token_period: "1h" });
      const [service] = config.services;
      expect(service.inference_url).toBe("https://***@llm.example.com/v1");
      expect(service.inference_headers).toEqual({ Authorization: REDACTED, "X-Team": REDACTED });
      expect(service.backends[0]).toMatchObject({ url: "https://b1.example.com", headers: { Authorization: REDACTED } });
      expect(service.swagger_headers).toEqual({ "X-Api-Key": REDACTED });
      expect(service.model).toBe("gpt");
    } finally {
      await gw.close();
    }
  });

  it("shows an unset secret as empty: not set is no secret", async () => {
    const gw = await startTestRuntime("services: []\n", [webhooks]);
    try {
      registerOpsRoutes(gw.runtime, { reload: async () => ({ ok: true, services: 0 }) });
      const config = (await (await gw.request("/-/config")).json()) as { webhooks: { signing_secret: string }; redis: { password: string } };
      expect(config.webhooks.signing_secret).toBe("");
      expect(config.redis.password).toBe("");
    } finally {
      await gw.close();
    }
  });
});
