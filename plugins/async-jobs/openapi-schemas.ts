/** The bodies of the job endpoints (submission, record, listing, purge) and of the queue admin endpoints. */
import { type TSchema, Type } from "@sinclair/typebox";
import { IdList, PageFields, ref, StringEnum, Timestamp } from "../../core/openapi/schema.ts";

const JOB_STATUSES = ["pending", "processing", "completed", "failed", "cancelled"] as const;

export const jobSchemas: Record<string, TSchema> = {
  Expired: Type.Object({ status: StringEnum(["expired"]) }, { description: "The job record's retention passed (HTTP 410)" }),
  JobAccepted: Type.Object(
    {
      job_id: Type.String({ format: "uuid" }),
      service_type: Type.String(),
      model: Type.String(),
      status: StringEnum(["pending"]),
    },
    { description: "The answer to a submission (202), repeated on an idempotent replay (200)" },
  ),
  JobRecord: Type.Object(
    {
      id: Type.String({ format: "uuid" }),
      status: StringEnum(JOB_STATUSES),
      service_type: Type.String(),
      model: Type.String({ description: "Model used" }),
      result: Type.Optional(Type.Object({}, { additionalProperties: true, description: "Present only when completed" })),
      error: Type.Optional(Type.String({ description: "Present only when failed" })),
      attempts: Type.Optional(Type.Integer({ minimum: 0, description: "Attempts started (services[].retry); 0 before the first" })),
      created_at: Timestamp("Submission time"),
    },
    { description: "A job record", additionalProperties: true },
  ),
  JobCancelled: Type.Object(
    { job_id: Type.String({ format: "uuid" }), status: StringEnum(JOB_STATUSES, { description: "The status after the call" }) },
    { description: "Pending jobs are cancelled at once; a processing job is stopped by its relay" },
  ),
  JobList: Type.Object({
    total: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 1, maximum: 100 }),
    offset: Type.Integer({ minimum: 0 }),
    jobs: Type.Array(ref("JobRecord"), { description: "Most recent first" }),
  }),
  PurgeRequest: Type.Object({ model: Type.String({ minLength: 1, description: "Model whose jobs and files are deleted" }) }),
  PurgeResult: Type.Object({ model: Type.String(), deleted: Type.Integer({ minimum: 0, description: "Job records deleted" }) }),
  QueueList: Type.Object({
    queues: Type.Array(
      Type.Object({
        model: Type.String({ description: "The model alias (the service type for a service without one)" }),
        pending: Type.Integer({ minimum: 0, description: "Queued jobs, those waiting for a retry included" }),
        processing: Type.Integer({ minimum: 0, description: "Jobs a relay has claimed" }),
        deadletter: Type.Integer({ minimum: 0, description: "Jobs the GC reaper gave up on (relay:<model>:deadletter)" }),
        oldest_pending_age_seconds: Type.Integer({
          minimum: 0,
          nullable: true,
          description: "Age of the oldest of the next 50 jobs in line and the first 50 retries; null when none is pending",
        }),
      }),
    ),
  }),
  RelayDeadLetters: Type.Object({
    ...PageFields,
    jobs: Type.Array(
      Type.Object({
        job_id: Type.String(),
        model: Type.String(),
        error: Type.String({ description: "Why the job failed; empty when its record has expired" }),
        status: Type.String({ description: "The job's status (failed), or expired when only the id is left" }),
        service_type: Type.Optional(Type.String()),
        consumer_name: Type.Optional(Type.String()),
        created_at: Type.Optional(Type.String({ format: "date-time" })),
        failed_at: Type.Optional(Type.String({ format: "date-time" })),
        attempts: Type.Optional(Type.Integer({ minimum: 0 })),
      }),
    ),
  }),
  RelayDiscardRequest: Type.Object({ model: Type.String({ minLength: 1 }), ids: Type.Optional(IdList("Job ids to discard")) }),
  RelayDiscardResult: Type.Object({ model: Type.String(), discarded: Type.Integer({ minimum: 0, description: "Entries taken off the list" }) }),
};
