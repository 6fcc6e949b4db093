/** The `usage:` section: how long per-consumer usage counters are kept. */
import type { Static } from "@sinclair/typebox";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const UsageSchema = Section({ retention: Duration("", "Per-consumer usage key retention, e.g. 8760h; empty = all-time") }, "Usage tracking");

export type UsageConfig = Static<typeof UsageSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    usage: UsageConfig;
  }
}

export const usageSection: ConfigSection<typeof UsageSchema> = { key: "usage", schema: UsageSchema };
