/**
 * The batch plugin's part of the API document: the Files, Batches and Message Batches routes,
 * the operators' list, and the batch webhook (each documented only when its route is served).
 */
import { ADMIN, type AdminOperation, servedOperations } from "../../core/openapi/admin.ts";
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";
import type { DocInput } from "../../core/openapi/input.ts";
import { errors, jsonResponse, schemaRef } from "../../core/openapi/responses.ts";
import type { Operation, Parameter, Paths } from "../../core/openapi/types.ts";
import { batchSchemas } from "./openapi-schemas.ts";

const TAGS = ["Batches"];
const pathId = (name: string, description: string): Parameter => ({ name, in: "path", required: true, description, schema: { type: "string" } });
const FILE_ID = pathId("file_id", "file-...");
const BATCH_ID = pathId("batch_id", "batch_...");
const MESSAGE_BATCH_ID = pathId("message_batch_id", "msgbatch_...");
const query = (name: string, description: string, schema: Parameter["schema"] = { type: "string" }): Parameter => ({ name, in: "query", description, schema });
const LIMIT = (max: number, fallback: number) =>
  query("limit", `Items per page (default ${fallback})`, { type: "integer", minimum: 1, maximum: max, default: fallback });
const IDEMPOTENCY: Parameter = {
  name: "Idempotency-Key",
  in: "header",
  description: "A repeat while its batch exists answers that batch (X-Idempotent-Replay: true); 409 once it is gone",
  schema: { type: "string", maxLength: 255 },
};
const json = (schema: string) => ({ required: true, content: { "application/json": { schema: schemaRef(schema) } } });

const webhook: NonNullable<Operation["callbacks"]> = {
  batchEnded: {
    "{$request.body#/callback_url}": {
      post: {
        operationId: "webhook_batch_ended",
        summary: "A batch ended",
        description: "Signed (X-Svc-Signature) and retried like a job's webhook; X-Job-ID carries the batch id.",
        tags: TAGS,
        requestBody: json("BatchEvent"),
        responses: { "200": { description: "Delivered" } },
      },
    },
  },
};

const OPERATIONS: AdminOperation[] = [
  {
    method: "post",
    path: "/v1/files",
    operation: {
      operationId: "batch_file_upload",
      summary: "Upload a batch input file",
      description: "Streams the JSONL into the object store, up to batches.max_file_size_mb (413 past it). Purpose `batch` only.",
      tags: TAGS,
      requestBody: { required: true, content: { "multipart/form-data": { schema: schemaRef("BatchFileUpload") } } },
      responses: { "200": jsonResponse("BatchFile", "The stored file"), ...errors(400, 401, 413) },
    },
  },
  {
    method: "get",
    path: "/v1/files",
    operation: {
      operationId: "batch_file_list",
      summary: "The caller's files",
      tags: TAGS,
      parameters: [LIMIT(10_000, 100), query("after", "The last id of the previous page"), query("purpose", "Only files of this purpose")],
      responses: { "200": jsonResponse("BatchFileList", "A page, newest first"), ...errors(400, 401) },
    },
  },
  {
    method: "get",
    path: "/v1/files/{file_id}",
    operation: {
      operationId: "batch_file_get",
      summary: "A file",
      tags: TAGS,
      parameters: [FILE_ID],
      responses: { "200": jsonResponse("BatchFile", "The file"), ...errors(401, 404) },
    },
  },
  {
    method: "get",
    path: "/v1/files/{file_id}/content",
    operation: {
      operationId: "batch_file_content",
      summary: "A file's bytes",
      tags: TAGS,
      parameters: [FILE_ID],
      responses: {
        "200": { description: "The bytes, streamed", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
        ...errors(401, 404),
      },
    },
  },
  {
    method: "delete",
    path: "/v1/files/{file_id}",
    operation: {
      operationId: "batch_file_delete",
      summary: "Delete a file",
      tags: TAGS,
      parameters: [FILE_ID],
      responses: { "200": jsonResponse("BatchFileDeleted", "Deleted"), ...errors(401, 404) },
    },
  },
  {
    method: "post",
    path: "/v1/batches",
    operation: {
      operationId: "batch_create",
      summary: "Create a batch",
      description: "Validated in the background (status validating); every line then runs as the caller's own request through the LLM path.",
      tags: TAGS,
      parameters: [IDEMPOTENCY],
      requestBody: json("BatchCreate"),
      responses: { "200": jsonResponse("Batch", "The batch"), ...errors(400, 401, 404, 409) },
      callbacks: webhook,
    },
  },
  {
    method: "get",
    path: "/v1/batches",
    operation: {
      operationId: "batch_list",
      summary: "The caller's batches",
      tags: TAGS,
      parameters: [LIMIT(100, 20), query("after", "The last id of the previous page")],
      responses: { "200": jsonResponse("BatchList", "A page, newest first"), ...errors(400, 401) },
    },
  },
  {
    method: "get",
    path: "/v1/batches/{batch_id}",
    operation: {
      operationId: "batch_get",
      summary: "A batch",
      tags: TAGS,
      parameters: [BATCH_ID],
      responses: { "200": jsonResponse("Batch", "The batch"), ...errors(401, 404) },
    },
  },
  {
    method: "post",
    path: "/v1/batches/{batch_id}/cancel",
    operation: {
      operationId: "batch_cancel",
      summary: "Cancel a batch",
      description: "No new line starts; lines in flight finish; then cancelled, with partial files.",
      tags: TAGS,
      parameters: [BATCH_ID],
      responses: { "200": jsonResponse("Batch", "The batch, cancelling"), ...errors(401, 404, 409) },
    },
  },
  {
    method: "post",
    path: "/v1/messages/batches",
    operation: {
      operationId: "message_batch_create",
      summary: "Create a Message Batch",
      description: "Every request is checked first (400 naming its index); each then runs as the caller's own POST /v1/messages.",
      tags: TAGS,
      parameters: [IDEMPOTENCY],
      requestBody: json("MessageBatchCreate"),
      responses: { "200": jsonResponse("MessageBatch", "The batch"), ...errors(400, 401, 409, 413) },
    },
  },
  {
    method: "get",
    path: "/v1/messages/batches",
    operation: {
      operationId: "message_batch_list",
      summary: "The caller's Message Batches",
      tags: TAGS,
      parameters: [LIMIT(1000, 20), query("after_id", "The last_id of the previous page")],
      responses: { "200": jsonResponse("MessageBatchList", "A page, newest first"), ...errors(400, 401) },
    },
  },
  {
    method: "get",
    path: "/v1/messages/batches/{message_batch_id}",
    operation: {
      operationId: "message_batch_get",
      summary: "A Message Batch",
      tags: TAGS,
      parameters: [MESSAGE_BATCH_ID],
      responses: { "200": jsonResponse("MessageBatch", "The batch"), ...errors(401, 404) },
    },
  },
  {
    method: "get",
    path: "/v1/messages/batches/{message_batch_id}/results",
    operation: {
      operationId: "message_batch_results",
      summary: "A Message Batch's results",
      description: 'JSONL, one `{"custom_id","result":{"type":"succeeded"|"errored"|"canceled"|"expired",...}}` a line; once it ended.',
      tags: TAGS,
      parameters: [MESSAGE_BATCH_ID],
      responses: {
        "200": { description: "The results, streamed", content: { "application/binary": { schema: { type: "string", format: "binary" } } } },
        ...errors(401, 404),
      },
    },
  },
  {
    method: "post",
    path: "/v1/messages/batches/{message_batch_id}/cancel",
    operation: {
      operationId: "message_batch_cancel",
      summary: "Cancel a Message Batch",
      tags: TAGS,
      parameters: [MESSAGE_BATCH_ID],
      responses: { "200": jsonResponse("MessageBatch", "The batch, canceling"), ...errors(401, 404) },
    },
  },
  {
    method: "get",
    path: "/-/batches",
    operation: {
      operationId: "batches_admin_list",
      summary: "Every owner's batches",
      description: `Newest first, with their progress. ${ADMIN}`,
      tags: ["Admin"],
      parameters: [LIMIT(500, 50), query("after", "The last id of the previous page")],
      responses: { "200": jsonResponse("AdminBatchList", "A page"), ...errors(400, 401) },
    },
  },
];

function batchPaths(input: DocInput): Paths {
  return servedOperations(input, OPERATIONS);
}

export const batchesOpenApi: OpenApiContribution = {
  tags: [{ name: "Batches", description: "OpenAI Files and Batches, Anthropic Message Batches: run by the gateway on any configured model" }],
  schemas: batchSchemas,
  paths: { batches: batchPaths },
};
