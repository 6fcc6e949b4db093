/**
 * The `responses:` section: how long the gateway keeps the Responses it stores
 * (docs/responses.md#stored-responses). A span is a duration ("720h") or a whole number of days
 * ("30d"), as the Responses API's own retention is told.
 */
import { type Static, Type } from "@sinclair/typebox";
import { parseDuration } from "../../core/config/duration.ts";
import { Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const ResponsesSchema = Section(
  {
    store_ttl: Type.String({
      default: "30d",
      description: 'How long a stored response (`store: true`, the default) and its input items are kept ("30d", "720h")',
    }),
  },
  "Responses API",
  "See [Responses API clients](responses.md).",
);

export type ResponsesConfig = Static<typeof ResponsesSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    responses: ResponsesConfig;
  }
}

const DAY_MS = 24 * 3_600_000;

/** Milliseconds of a span, or undefined when it is neither a duration nor a whole number of days. */
export function spanMs(text: string): number | undefined {
  const days = /^(\d+)d$/.exec(text.trim());
  if (days) return Number(days[1]) * DAY_MS;
  const parsed = parseDuration(text);
  return typeof parsed === "number" ? parsed : undefined;
}

export const responsesSection: ConfigSection<typeof ResponsesSchema> = {
  key: "responses",
  schema: ResponsesSchema,
  validate: (section) => {
    const ms = spanMs(section.store_ttl);
    if (ms === undefined) return [`responses.store_ttl: "${section.store_ttl}" is not a duration; write hours or days, e.g. "720h" or "30d"`];
    if (ms <= 0) return [`responses.store_ttl: must be longer than 0, got "${section.store_ttl}"`];
    return [];
  },
};
