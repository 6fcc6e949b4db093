/** Component schemas of the admin endpoints of issue 32 (queues, dead letters, running config). */
import { Type, type TSchema } from "@sinclair/typebox";
import { ref } from "./schemas.ts";

const Page = {
  total: Type.Integer({ minimum: 0, description: "Entries in the whole list" }),
  limit: Type.Integer({ minimum: 1, maximum: 100 }),
  offset: Type.Integer({ minimum: 0 }),
};
const Ids = (what: string) => Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: `${what}; leave it out for all` });
const Skipped = Type.Array(Type.Object({ id: Type.String(), reason: Type.String() }), { description: "Named or found entries not acted on, and why" });

export const adminSchemas: Record<string, TSchema> = {
  QueueList: Type.Object({
    queues: Type.Array(
      Type.Object({
        model: Type.String({ description: "The model alias (the service type for a service without one)" }),
        pending: Type.Integer({ minimum: 0, description: "Queued jobs, those waiting for a retry included" }),
        processing: Type.Integer({ minimum: 0, description: "Jobs a relay has claimed" }),
        deadletter: Type.Integer({ minimum: 0, description: "Jobs the GC reaper gave up on (relay:<model>:deadletter)" }),
        oldest_pending_age_seconds: Type.Integer({ minimum: 0, nullable: true, description: "Age of the oldest of the next 50 jobs in line and the first 50 retries; null when none is pending" }),
      }),
    ),
  }),
  RelayDeadLetters: Type.Object({
    ...Page,
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
  RelayDiscardRequest: Type.Object({ model: Type.String({ minLength: 1 }), ids: Type.Optional(Ids("Job ids to discard")) }),
  RelayDiscardResult: Type.Object({ model: Type.String(), discarded: Type.Integer({ minimum: 0, description: "Entries taken off the list" }) }),
  WebhookDelivery: Type.Object({
    id: Type.String({ description: "The delivery id (the job id)" }),
    job_id: Type.String(),
    service_type: Type.String(),
    status: Type.Optional(Type.String({ description: "The job's status the notification reports" })),
    url: Type.String(),
    attempts: Type.Integer({ minimum: 0 }),
    last_error: Type.Optional(Type.String()),
  }),
  WebhookRetries: Type.Object({
    ...Page,
    deliveries: Type.Array(Type.Intersect([ref("WebhookDelivery"), Type.Object({ created_at: Type.String({ format: "date-time" }), due_at: Type.String({ format: "date-time", description: "The next attempt, or the end of the lease of the attempt under way" }) })])),
  }),
  WebhookDeadLetters: Type.Object({
    ...Page,
    deliveries: Type.Array(Type.Intersect([ref("WebhookDelivery"), Type.Object({ failed_at: Type.String({ format: "date-time" }) })])),
  }),
  RedeliverRequest: Type.Object({ ids: Type.Optional(Ids("Delivery ids to redeliver")) }),
  RedeliverResult: Type.Object({ redelivered: Type.Integer({ minimum: 0 }), skipped: Skipped }),
  RunningConfig: Type.Object({}, { additionalProperties: true, description: 'The running config, every secret as "***" (an unset one stays empty)' }),
};

