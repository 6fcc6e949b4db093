/** The usage plugin's part of the API document: its endpoints and the usage records, pages and report they answer with. */
import { Type } from "@sinclair/typebox";
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";
import { ref, StringEnum, Timestamp } from "../../core/openapi/schema.ts";
import { usagePaths } from "./openapi-paths.ts";

/** Where pricing is on (docs/cost.md). */
const Cost = Type.Number({ minimum: 0, description: "In pricing.currency, rounded to 6 decimals" });
const Tokens = Type.Object(
  { prompt: Type.Integer({ minimum: 0 }), completion: Type.Integer({ minimum: 0 }) },
  { description: "LLM tokens" },
);
/** Refused requests per outcome (docs/usage.md#refused-requests). */
const Outcomes = (of: string) =>
  Type.Object({}, {
    additionalProperties: Type.Integer({ minimum: 1 }),
    example: { guardrail_blocked: 2 },
    description:
      `${of} refused with an outcome, per outcome: \`guardrail_blocked\` for a guardrail's block (not counted in \`requests\`); only non-zero ones, omitted when none`,
  });

export const usageOpenApi: OpenApiContribution = {
  tags: [{ name: "Usage", description: "Per-consumer usage" }],
  schemas: {
    UsageRecord: Type.Object(
      {
        consumer: Type.String(),
        retention: Type.String({ description: '"all-time" or a duration such as "8760h"' }),
        last_active: Type.Optional(Timestamp("Omitted if no activity")),
        usage: Type.Array(
          Type.Object({
            service_type: Type.String(),
            total: Type.Object({
              requests: Type.Integer({ minimum: 0 }),
              jobs: Type.Optional(Type.Integer({ minimum: 0, description: "Async types" })),
              processing_time_seconds: Type.Optional(Type.Number({ minimum: 0, description: "Async types" })),
              tokens: Type.Optional(Tokens),
              cost: Type.Optional(Cost),
              outcomes: Type.Optional(Outcomes("Requests")),
            }),
            window: Type.Optional(
              Type.Object(
                {
                  requests: Type.Integer({ minimum: 0 }),
                  tokens: Type.Optional(Type.Integer({ minimum: 0 })),
                  processing_time_seconds: Type.Optional(Type.Number({ minimum: 0 })),
                  cost: Type.Optional(Type.Number({ minimum: 0, description: "In the cost budget's window, in pricing.currency" })),
                  reset_at: Timestamp("When the window expires"),
                },
                { description: "The current rate-limit window; omitted when none is active" },
              ),
            ),
          }),
        ),
      },
      { description: "A consumer's usage, per service type" },
    ),
    UsageList: Type.Object(
      {
        total: Type.Integer({ minimum: 0 }),
        limit: Type.Integer({ minimum: 1, maximum: 100 }),
        offset: Type.Integer({ minimum: 0 }),
        consumers: Type.Array(ref("UsageRecord")),
      },
      { description: "One page of the consumers' usage records" },
    ),
    UsageBucket: Type.Object({
      bucket: Type.String({ description: "YYYYMMDD (daily), YYYY-Www (weekly) or YYYYMM (monthly)" }),
      requests: Type.Integer({ minimum: 0 }),
      jobs: Type.Optional(Type.Integer({ minimum: 0 })),
      processing_time_seconds: Type.Optional(Type.Number({ minimum: 0 })),
      tokens: Type.Optional(Tokens),
      cost: Type.Optional(Cost),
      outcomes: Type.Optional(Outcomes("The bucket's requests")),
    }),
    UsageReport: Type.Object(
      {
        service_type: Type.String(),
        period: StringEnum(["daily", "weekly", "monthly"]),
        from: Type.String({ format: "date" }),
        to: Type.String({ format: "date" }),
        buckets: Type.Array(ref("UsageBucket"), { description: "Every bucket of the range, zero-filled" }),
        total: Type.Optional(Type.Object({}, { additionalProperties: true, description: "With total=true: the sum of all buckets" })),
        groups: Type.Optional(
          Type.Array(
            Type.Object({
              key: Type.String({ description: "The consumer, model alias or API key (the consumer when a request had none)" }),
              requests: Type.Integer({ minimum: 0 }),
              tokens: Type.Integer({ minimum: 0, description: "Prompt + completion" }),
              cost: Cost,
              outcomes: Type.Optional(Outcomes("The group's requests")),
            }),
            { description: "With group_by: the range's totals per group, most cost first" },
          ),
        ),
      },
      { description: "Calendar totals of one service type across consumers" },
    ),
  },
  paths: { usage: usagePaths },
};
