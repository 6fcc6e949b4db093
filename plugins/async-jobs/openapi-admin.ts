/** The queue admin endpoints: queue depths per model and the relay's dead letters. Each documented only when its route exists. */
import { ADMIN, type AdminOperation, body, PAGE, servedOperations } from "../../core/openapi/admin.ts";
import type { DocInput } from "../../core/openapi/input.ts";
import { errors, jsonResponse } from "../../core/openapi/responses.ts";
import type { Paths } from "../../core/openapi/types.ts";

const OPERATIONS: AdminOperation[] = [
  {
    method: "get",
    path: "/-/queues",
    operation: {
      operationId: "queues",
      summary: "Queue depths per model",
      description:
        `Pending, processing and dead-lettered jobs and the oldest pending job's age, per configured model (and per removed model that still has a queue). ${ADMIN}`,
      tags: ["Admin"],
      responses: { "200": jsonResponse("QueueList", "One entry per model") },
    },
  },
  {
    method: "get",
    path: "/-/relay/deadletter",
    operation: {
      operationId: "relay_deadletters",
      summary: "Jobs the relay gave up on, with their errors",
      description: `Oldest first; without model, every model's list one after the other (configured ones first). ${ADMIN}`,
      tags: ["Admin"],
      parameters: [{
        name: "model",
        in: "query",
        description: "Only this model (a model removed from the config is still readable while it has dead letters)",
        schema: { type: "string" },
      }, ...PAGE],
      responses: { "200": jsonResponse("RelayDeadLetters", "A page of dead-lettered jobs"), ...errors(400, 404) },
    },
  },
  {
    method: "post",
    path: "/-/relay/deadletter/discard",
    operation: {
      operationId: "relay_deadletter_discard",
      summary: "Discard relay dead letters",
      description: `Takes the named jobs (or, without ids, all of the model) off the list; their input is gone, so they cannot be rerun. Audited. ${ADMIN}`,
      tags: ["Admin"],
      requestBody: body("RelayDiscardRequest"),
      responses: { "200": jsonResponse("RelayDiscardResult", "Discarded"), ...errors(400, 404, 413, 415) },
    },
  },
];

export function queueAdminPaths(input: DocInput): Paths {
  return servedOperations(input, OPERATIONS);
}
