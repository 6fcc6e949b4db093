/**
 * The `jobs:` section (idempotency and tombstone retention) and the per-service upload
 * rules of async jobs (`services[i].accepted_exts`, `services[i].max_file_size_mb`).
 */
import { Type, type Static } from "@sinclair/typebox";
import { positiveDurationProblems } from "../../core/config/load.ts";
import { Duration, Section, StringList } from "../../core/config/schema-parts.ts";
import type { ConfigSection, ServiceFieldSet } from "../../core/config/schema.ts";

export const JobsSchema = Section(
  {
    idempotency_ttl: Duration("24h", "Idempotency-Key retention; must be positive"),
    expired_marker_ttl: Duration(
      "168h",
      "Tombstone retention: an expired job answers 410 this long after its record is gone (so 0s is refused); should exceed the job record TTL",
    ),
  },
  "Async jobs",
);

export const JobServiceFields = Type.Object({
  accepted_exts: StringList("Allowed upload extensions for async jobs, with or without the dot, any letter case (empty = any)"),
  max_file_size_mb: Type.Number({ exclusiveMinimum: 0, default: 100, description: "Max async upload size in MiB" }),
});

export type JobsConfig = Static<typeof JobsSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    jobs: JobsConfig;
  }
  interface ServiceFields extends Static<typeof JobServiceFields> {}
}

export const jobsSection: ConfigSection<typeof JobsSchema> = {
  key: "jobs",
  schema: JobsSchema,
  validate: (section) => [
    ...positiveDurationProblems("jobs.idempotency_ttl", section.idempotency_ttl, 'default "24h": how long an Idempotency-Key is remembered; remove the key for the default'),
    ...positiveDurationProblems(
      "jobs.expired_marker_ttl",
      section.expired_marker_ttl,
      'default "168h": how long an expired job answers 410 before 404; with 0s it would never answer 410',
    ),
  ],
};

export const jobServiceFields: ServiceFieldSet<typeof JobServiceFields> = { schema: JobServiceFields };
