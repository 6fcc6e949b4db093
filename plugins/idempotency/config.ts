/** `jobs.idempotency_ttl`: this plugin's field in the async jobs' `jobs` section. */
import { Type } from "@sinclair/typebox";
import { positiveDurationProblems } from "../../core/config/load.ts";
import { Duration } from "../../core/config/schema-parts.ts";
import type { SectionFieldSet } from "../../core/config/schema.ts";

export const IdempotencyFields = Type.Object({
  idempotency_ttl: Duration("24h", "Idempotency-Key retention; must be positive"),
});

export const idempotencyFields: SectionFieldSet<typeof IdempotencyFields> = {
  section: "jobs",
  schema: IdempotencyFields,
  validate: (fields) =>
    positiveDurationProblems(
      "jobs.idempotency_ttl",
      fields.idempotency_ttl,
      'default "24h": how long an Idempotency-Key is remembered; remove the key for the default',
    ),
};
