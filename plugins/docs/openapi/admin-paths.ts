/**
 * The admin endpoints of issue 32: the running config (the core's, always served), queue
 * depths and relay dead letters (async-jobs), the webhook retry queue and dead letters
 * (webhooks) and the console page. Each documented only when its route exists.
 */
import type { DocInput } from "./input.ts";
import { errors, jsonResponse, schemaRef } from "./responses.ts";
import type { Operation, Parameter, Paths } from "./types.ts";

const ADMIN = "Admin endpoint: secure /-/* upstream.";
const PAGE: Parameter[] = [
  { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100, default: 20 } },
  { name: "offset", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
];
const body = (schema: string) => ({ required: true, content: { "application/json": { schema: schemaRef(schema) } } });

const OPERATIONS: Array<{ method: "get" | "post"; path: string; operation: Operation }> = [
  {
    method: "get",
    path: "/-/queues",
    operation: { operationId: "queues", summary: "Queue depths per model", description: `Pending, processing and dead-lettered jobs and the oldest pending job's age, per configured model (and per removed model that still has a queue). ${ADMIN}`, tags: ["Admin"], responses: { "200": jsonResponse("QueueList", "One entry per model") } },
  },
  {
    method: "get",
    path: "/-/relay/deadletter",
    operation: {
      operationId: "relay_deadletters",
      summary: "Jobs the relay gave up on, with their errors",
      description: `Oldest first; without model, every model's list one after the other (configured ones first). ${ADMIN}`,
      tags: ["Admin"],
      parameters: [{ name: "model", in: "query", description: "Only this model (a model removed from the config is still readable while it has dead letters)", schema: { type: "string" } }, ...PAGE],
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
  {
    method: "get",
    path: "/-/webhooks/retries",
    operation: { operationId: "webhook_retries", summary: "Webhook deliveries waiting for a retry", description: `Soonest first, with the attempt under way or next. ${ADMIN}`, tags: ["Admin"], parameters: PAGE, responses: { "200": jsonResponse("WebhookRetries", "A page of deliveries"), ...errors(400) } },
  },
  {
    method: "get",
    path: "/-/webhooks/deadletter",
    operation: { operationId: "webhook_deadletters", summary: "Webhooks that failed every attempt", description: `Oldest first, with the last error. ${ADMIN}`, tags: ["Admin"], parameters: PAGE, responses: { "200": jsonResponse("WebhookDeadLetters", "A page of dead letters"), ...errors(400) } },
  },
  {
    method: "post",
    path: "/-/webhooks/deadletter/redeliver",
    operation: {
      operationId: "webhook_redeliver",
      summary: "Redeliver dead-lettered webhooks",
      description: `The named deliveries (or, without ids, every one) go back on the durable retry schedule with every attempt of webhooks.max_retries, the same body signed anew at each attempt. Audited. ${ADMIN}`,
      tags: ["Admin"],
      requestBody: body("RedeliverRequest"),
      responses: { "200": jsonResponse("RedeliverResult", "Scheduled"), ...errors(400, 413, 415) },
    },
  },
  {
    method: "get",
    path: "/-/config",
    operation: { operationId: "running_config", summary: "The running config, secrets redacted", description: `What this runtime runs (not the file). Every secret is "***". ${ADMIN}`, tags: ["Admin"], responses: { "200": jsonResponse("RunningConfig", "The config") } },
  },
  {
    method: "get",
    path: "/-/console",
    operation: { operationId: "console", summary: "The admin console", description: `An HTML page over these endpoints; it asks for the admin token. ${ADMIN}`, tags: ["Admin"], responses: { "200": { description: "HTML page", content: { "text/html": { schema: { type: "string" } } } } } },
  },
];

export function adminPaths(input: DocInput): Paths {
  const paths: Paths = {};
  for (const { method, path, operation } of OPERATIONS) {
    if (path !== "/-/config" && !input.served(method, path)) continue;
    paths[path] = { ...paths[path], [method]: operation };
  }
  return paths;
}
