/**
 * The `jobs:` section (tombstone retention), the per-service upload rules of async jobs
 * (`services[i].accepted_exts`, `services[i].max_file_size_mb`), and the fields of async jobs in
 * sections they share: the job record lifetimes in `lifecycle` (the GC's section) and
 * `metrics.consumer_labels`. Other plugins get the lifetimes from the `jobs` service.
 */
import { type Static, Type } from "@sinclair/typebox";
import { positiveDurationProblems } from "../../core/config/load.ts";
import { Duration, Section, StringList } from "../../core/config/schema-parts.ts";
import type { ConfigSection, SectionFieldSet, ServiceFieldSet } from "../../core/config/schema.ts";
import { jobTtlMs } from "./ttl.ts";

export const JobsSchema = Section(
  {
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
    ...positiveDurationProblems(
      "jobs.expired_marker_ttl",
      section.expired_marker_ttl,
      'default "168h": how long an expired job answers 410 before 404; with 0s it would never answer 410',
    ),
  ],
};

export const jobServiceFields: ServiceFieldSet<typeof JobServiceFields> = { schema: JobServiceFields };

/** What happens to a job record once its job ended: the `lifecycle` fields the job store applies. */
export const JobLifetimeFields = Type.Object({
  persists_result: Type.Boolean({
    default: false,
    description:
      "false = job record and result deleted after the first consumption (first GET of a completed result, or first successful webhook); true = kept until their TTL",
  }),
  job_ttl: Section(
    {
      global: Duration("", "Fallback TTL for every status"),
      completed: Duration("", "TTL of completed jobs (takes precedence over global)"),
      pending: Duration("", "TTL of pending jobs"),
      failed: Duration("", "TTL of failed jobs; when all TTLs are empty, a 2h safety net applies"),
    },
    "Job record TTLs (2h safety net when all empty)",
  ),
});

export type JobLifetimes = Static<typeof JobLifetimeFields>;

declare module "../../core/config/schema.ts" {
  interface ConfigFacts {
    /** The pending job TTL in ms (`lifecycle.job_ttl.pending`, else `.global`, else the 2h safety net): also the input object lifetime. */
    pendingJobTtlMs: number;
  }
}

export const jobLifetimeFields: SectionFieldSet<typeof JobLifetimeFields> = {
  section: "lifecycle",
  schema: JobLifetimeFields,
  facts: (lifetimes) => ({ pendingJobTtlMs: jobTtlMs(lifetimes, "pending") }),
};

/** `metrics.consumer_labels`: the consumer label of this plugin's submission counter. */
export const ConsumerLabelFields = Type.Object({
  consumer_labels: Type.Boolean({
    default: false,
    description: "Consumer label on svc_jobs_by_consumer_total; meant for fewer than 50 consumers (one series each)",
  }),
});

export const consumerLabelFields: SectionFieldSet<typeof ConsumerLabelFields> = { section: "metrics", schema: ConsumerLabelFields };
