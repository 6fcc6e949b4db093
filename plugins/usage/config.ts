/** The `usage:` section: how long per-consumer usage counters are kept, and when they are written. */
import { type Static, Type } from "@sinclair/typebox";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const UsageSchema = Section(
  {
    retention: Duration("", "Per-consumer usage key retention, e.g. 8760h; empty = all-time"),
    write: Type.Union([Type.Literal("before_answer"), Type.Literal("after_answer")], {
      default: "before_answer",
      description:
        "before_answer: an answer ends once its usage is written (a read right after it sees it); after_answer: the answer ends without waiting, and the usage lands a few ms later",
    }),
  },
  "Usage tracking",
  "`write: after_answer` saves each consumer's request the wait for the usage write (one store round trip, shared by the answers of " +
    "one event-loop turn); see [When usage is visible](usage.md#when-usage-is-visible).",
);

export type UsageConfig = Static<typeof UsageSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    usage: UsageConfig;
  }
}

export const usageSection: ConfigSection<typeof UsageSchema> = { key: "usage", schema: UsageSchema };
