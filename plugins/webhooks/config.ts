/** The `webhooks:` section: delivery retries, signing and the SSRF switch of job callbacks. */
import { type Static, Type } from "@sinclair/typebox";
import { positiveDurationProblems } from "../../core/config/load.ts";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const WebhooksSchema = Section(
  {
    max_retries: Type.Integer({ minimum: 1, default: 3, description: "Total delivery attempts, including the first" }),
    retry_backoff: Duration("30s", "First retry delay, doubled on each retry"),
    max_backoff: Duration("10m", "Retry delay cap"),
    signing_secret: Type.String({ default: "", description: "HMAC-SHA256 secret for X-Svc-Signature; empty = unsigned" }),
    timeout: Duration("10s", "Per-attempt timeout; must be positive"),
    allow_private_networks: Type.Boolean({
      default: false,
      description: "Allow loopback and private-range callback targets (link-local and metadata addresses are always refused)",
    }),
  },
  "Job webhooks",
);

export type WebhooksConfig = Static<typeof WebhooksSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    webhooks: WebhooksConfig;
  }
}

export const webhooksSection: ConfigSection<typeof WebhooksSchema> = {
  key: "webhooks",
  schema: WebhooksSchema,
  validate: (section) => positiveDurationProblems("webhooks.timeout", section.timeout, 'default "10s": the time one delivery attempt may take'),
};
