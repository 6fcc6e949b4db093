/**
 * The webhooks' part of the API document: the notification a callback_url receives, and the
 * admin endpoints over the retry queue and the dead letters (each documented only when its route exists).
 */
import { Type } from "@sinclair/typebox";
import { ADMIN, type AdminOperation, body, PAGE, servedOperations } from "../../core/openapi/admin.ts";
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";
import type { DocInput } from "../../core/openapi/input.ts";
import { errors, jsonResponse } from "../../core/openapi/responses.ts";
import { IdList, PageFields, ref, StringEnum, Timestamp } from "../../core/openapi/schema.ts";
import type { Paths } from "../../core/openapi/types.ts";

const OPERATIONS: AdminOperation[] = [
  {
    method: "get",
    path: "/-/webhooks/retries",
    operation: {
      operationId: "webhook_retries",
      summary: "Webhook deliveries waiting for a retry",
      description: `Soonest first, with the attempt under way or next. ${ADMIN}`,
      tags: ["Admin"],
      parameters: PAGE,
      responses: { "200": jsonResponse("WebhookRetries", "A page of deliveries"), ...errors(400) },
    },
  },
  {
    method: "get",
    path: "/-/webhooks/deadletter",
    operation: {
      operationId: "webhook_deadletters",
      summary: "Webhooks that failed every attempt",
      description: `Oldest first, with the last error. ${ADMIN}`,
      tags: ["Admin"],
      parameters: PAGE,
      responses: { "200": jsonResponse("WebhookDeadLetters", "A page of dead letters"), ...errors(400) },
    },
  },
  {
    method: "post",
    path: "/-/webhooks/deadletter/redeliver",
    operation: {
      operationId: "webhook_redeliver",
      summary: "Redeliver dead-lettered webhooks",
      description:
        `The named deliveries (or, without ids, every one) go back on the durable retry schedule with every attempt of webhooks.max_retries, the same body signed anew at each attempt. Audited. ${ADMIN}`,
      tags: ["Admin"],
      requestBody: body("RedeliverRequest"),
      responses: { "200": jsonResponse("RedeliverResult", "Scheduled"), ...errors(400, 413, 415) },
    },
  },
];

function webhookAdminPaths(input: DocInput): Paths {
  return servedOperations(input, OPERATIONS);
}

const Skipped = Type.Array(Type.Object({ id: Type.String(), reason: Type.String() }), { description: "Named or found entries not acted on, and why" });

export const webhooksOpenApi: OpenApiContribution = {
  schemas: {
    WebhookNotification: Type.Object(
      {
        job_id: Type.String({ format: "uuid" }),
        service_type: Type.String(),
        status: StringEnum(["completed", "failed", "cancelled"]),
        result: Type.Object({}, { additionalProperties: true }),
        error: Type.String({ description: "Empty when none" }),
        completed_at: Timestamp("When the job reached its terminal state"),
      },
      { description: "POSTed to callback_url when the job reaches a terminal state" },
    ),
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
      ...PageFields,
      deliveries: Type.Array(
        Type.Intersect([
          ref("WebhookDelivery"),
          Type.Object({
            created_at: Type.String({ format: "date-time" }),
            due_at: Type.String({ format: "date-time", description: "The next attempt, or the end of the lease of the attempt under way" }),
          }),
        ]),
      ),
    }),
    WebhookDeadLetters: Type.Object({
      ...PageFields,
      deliveries: Type.Array(Type.Intersect([ref("WebhookDelivery"), Type.Object({ failed_at: Type.String({ format: "date-time" }) })])),
    }),
    RedeliverRequest: Type.Object({ ids: Type.Optional(IdList("Delivery ids to redeliver")) }),
    RedeliverResult: Type.Object({ redelivered: Type.Integer({ minimum: 0 }), skipped: Skipped }),
  },
  paths: { webhooks: webhookAdminPaths },
};
