/** The bodies of the batch endpoints: files, OpenAI batches, Anthropic message batches, the operators' list and the batch webhook. */
import { type TSchema, Type } from "@sinclair/typebox";
import { ref, StringEnum } from "../../core/openapi/schema.ts";

const UnixSeconds = (description: string) => Type.Integer({ description: `${description} (Unix seconds)`, nullable: true });
const ListPage = (item: string, description: string) =>
  Type.Object({
    object: StringEnum(["list"]),
    data: Type.Array(ref(item), { description }),
    has_more: Type.Boolean(),
    first_id: Type.String({ nullable: true }),
    last_id: Type.String({ nullable: true, description: "The `after` of the next page" }),
  });
const BATCH_STATUSES = ["validating", "in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled"];
const RFC3339 = (description: string) => Type.String({ format: "date-time", nullable: true, description });

export const batchSchemas: Record<string, TSchema> = {
  BatchFile: Type.Object(
    {
      id: Type.String({ description: "file-..." }),
      object: StringEnum(["file"]),
      bytes: Type.Integer({ minimum: 0 }),
      created_at: Type.Integer({ description: "Unix seconds" }),
      expires_at: Type.Integer({ description: "When batches.retention deletes it (Unix seconds)" }),
      filename: Type.String(),
      purpose: StringEnum(["batch", "batch_output"]),
      status: StringEnum(["processed"]),
      status_details: Type.String({ nullable: true }),
    },
    { description: "An OpenAI File: a batch's input (purpose batch) or its output or error file (batch_output)" },
  ),
  BatchFileUpload: Type.Object({
    file: Type.String({ format: "binary", description: "The JSONL input, up to batches.max_file_size_mb" }),
    purpose: StringEnum(["batch"]),
  }),
  BatchFileList: ListPage("BatchFile", "The caller's files, newest first"),
  BatchFileDeleted: Type.Object({ id: Type.String(), object: StringEnum(["file"]), deleted: Type.Boolean() }),
  BatchCreate: Type.Object({
    input_file_id: Type.String({ description: "A file uploaded with purpose batch: one request a line, {custom_id, method: POST, url, body}" }),
    endpoint: StringEnum(["/v1/chat/completions", "/v1/embeddings", "/v1/responses"], {
      description: "Where every line goes (/v1/responses where a service serves it)",
    }),
    completion_window: Type.String({ description: "One of batches.completion_windows; no line starts after it" }),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: Type.String(), nullable: true, description: "Up to 16 string pairs" })),
    callback_url: Type.Optional(Type.String({ format: "uri", description: "The gateway's extension: a signed batch.* webhook when the batch ends" })),
  }),
  Batch: Type.Object(
    {
      id: Type.String({ description: "batch_..." }),
      object: StringEnum(["batch"]),
      endpoint: Type.String(),
      errors: Type.Object(
        {
          object: StringEnum(["list"]),
          data: Type.Array(
            Type.Object({ code: Type.String(), message: Type.String(), line: Type.Integer({ nullable: true, description: "1-based line of the input file" }) }),
          ),
        },
        { nullable: true, description: "Why validation failed (the first 100 problems)" },
      ),
      input_file_id: Type.String(),
      completion_window: Type.String(),
      status: StringEnum(BATCH_STATUSES),
      output_file_id: Type.String({ nullable: true }),
      error_file_id: Type.String({ nullable: true }),
      created_at: Type.Integer({ description: "Unix seconds" }),
      in_progress_at: UnixSeconds("Validation passed"),
      expires_at: Type.Integer({ description: "The end of the completion window (Unix seconds)" }),
      finalizing_at: UnixSeconds("Its files started being written"),
      completed_at: UnixSeconds("Completed"),
      failed_at: UnixSeconds("Validation failed"),
      expired_at: UnixSeconds("Ended past its window"),
      cancelling_at: UnixSeconds("Cancel asked"),
      cancelled_at: UnixSeconds("Cancelled"),
      request_counts: Type.Object({ total: Type.Integer({ minimum: 0 }), completed: Type.Integer({ minimum: 0 }), failed: Type.Integer({ minimum: 0 }) }),
      metadata: Type.Object({}, { additionalProperties: Type.String(), nullable: true }),
    },
    { description: "An OpenAI Batch" },
  ),
  BatchList: ListPage("Batch", "The caller's batches, newest first"),
  AdminBatch: Type.Intersect([
    ref("Batch"),
    Type.Object({
      api: StringEnum(["openai", "anthropic"]),
      owner: Type.String({ description: "The consumer; empty for anonymous callers" }),
      in_flight: Type.Integer({ minimum: 0, description: "Lines running now" }),
    }),
  ]),
  AdminBatchList: ListPage("AdminBatch", "Every owner's batches, newest first"),
  MessageBatchCreate: Type.Object({
    requests: Type.Array(
      Type.Object({ custom_id: Type.String(), params: Type.Object({}, { additionalProperties: true, description: "A Messages request (POST /v1/messages)" }) }),
    ),
  }),
  MessageBatch: Type.Object(
    {
      id: Type.String({ description: "msgbatch_..." }),
      type: StringEnum(["message_batch"]),
      processing_status: StringEnum(["in_progress", "canceling", "ended"]),
      request_counts: Type.Object({
        processing: Type.Integer({ minimum: 0 }),
        succeeded: Type.Integer({ minimum: 0 }),
        errored: Type.Integer({ minimum: 0 }),
        canceled: Type.Integer({ minimum: 0 }),
        expired: Type.Integer({ minimum: 0 }),
      }),
      ended_at: RFC3339("When it ended"),
      created_at: RFC3339("When it was created"),
      expires_at: RFC3339("The end of its window"),
      archived_at: RFC3339("Always null"),
      cancel_initiated_at: RFC3339("Cancel asked"),
      results_url: Type.String({
        nullable: true,
        description: "Once ended: this gateway's own results address, from the request's Host and scheme (X-Forwarded-Proto)",
      }),
    },
    { description: "An Anthropic Message Batch" },
  ),
  MessageBatchList: Type.Object({
    data: Type.Array(ref("MessageBatch"), { description: "Newest first" }),
    has_more: Type.Boolean(),
    first_id: Type.String({ nullable: true }),
    last_id: Type.String({ nullable: true, description: "The `after_id` of the next page" }),
  }),
  BatchEvent: Type.Object(
    {
      id: Type.String({ description: "evt_..." }),
      type: StringEnum(["batch.completed", "batch.failed", "batch.expired", "batch.cancelled"]),
      created_at: Type.Integer({ description: "Unix seconds" }),
      data: Type.Object({ id: Type.String({ description: "The batch id" }) }),
    },
    { description: "POSTed to a batch's callback_url when it ends (signed and retried like a job's webhook)" },
  ),
};
