/**
 * The OpenAI Batches endpoints: create (from an uploaded input file), retrieve, cancel, list.
 * A batch belongs to its creator's consumer, like its files (caller.ts).
 */
import { errors } from "../../../core/errors.ts";
import { isRecord } from "../../../core/llm/json.ts";
import type { PluginApi } from "../../../core/plugins/types.ts";
import { readJsonBody } from "../../../core/request-body/json-body.ts";
import { answering, type Caller, identifyCaller, json, listLimit } from "../caller.ts";
import type { FileStore } from "../files/store.ts";
import type { BatchEngine } from "./engine.ts";
import { type BatchRecord, batchView } from "./record.ts";
import { batchIdTime } from "./store.ts";

/** The endpoints a batch may target (`/v1/responses` where a service serves it). */
export const BATCH_ENDPOINTS = ["/v1/chat/completions", "/v1/embeddings"];
const OPTIONAL_ENDPOINTS = ["/v1/responses"];
const BODY_LIMIT = { maxBytes: 1024 * 1024, name: "the batch endpoints' body limit (1 MiB)", remedy: "send a smaller body" };
const LIST_DEFAULT = 20;
const LIST_MAX = 100;
const METADATA_KEYS = 16;
const IDEMPOTENCY_KEY_MAX = 255;

/** `metadata`: up to 16 string pairs (keys up to 64 characters, values up to 512), or null. */
export function checkMetadata(value: unknown): Record<string, string> | null {
  if (value === undefined || value === null) return null;
  const problem = `"metadata" must be an object of up to ${METADATA_KEYS} string values (keys up to 64 characters, values up to 512)`;
  if (!isRecord(value)) throw errors.badRequest(problem);
  const entries = Object.entries(value);
  if (entries.length > METADATA_KEYS || entries.some(([key, v]) => key.length > 64 || typeof v !== "string" || v.length > 512)) {
    throw errors.badRequest(problem);
  }
  return value as Record<string, string>;
}

/** A callback URL the webhooks plugin accepts, or a 400 saying why not. */
export async function checkCallback(api: PluginApi, value: unknown): Promise<string | undefined> {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw errors.badRequest('"callback_url" must be an http:// or https:// address');
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw errors.badRequest(`callback_url "${value.slice(0, 200)}" is not an absolute URL; send an http:// or https:// address`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw errors.badRequest(`callback_url must be an http:// or https:// address, got "${url.protocol}"`);
  }
  if (!api.has("webhooks")) {
    throw errors.badRequest("callback_url is not accepted: webhooks are turned off in this deployment (plugins: {webhooks: false}); poll the batch instead");
  }
  const refused = await api.use("webhooks").validateCallbackUrl(url.toString());
  if (refused !== null) throw errors.badRequest(`callback_url is not accepted: ${refused}`);
  return url.toString();
}

/** The request's Idempotency-Key, when it sent one. */
export function idempotencyKeyOf(request: Request): string | undefined {
  const value = request.headers.get("idempotency-key")?.trim();
  if (value === undefined || value === "") return undefined;
  if (value.length > IDEMPOTENCY_KEY_MAX) throw errors.badRequest(`Idempotency-Key is longer than ${IDEMPOTENCY_KEY_MAX} characters`);
  return value;
}

/** The answer to a create: the batch, or the one an Idempotency-Key already made (replayed), or 409 when that one is gone. */
export function createdAnswer(created: Awaited<ReturnType<BatchEngine["create"]>>, view: (batch: BatchRecord) => unknown, key: string | undefined): Response {
  if ("gone" in created) {
    throw errors.conflict(`Idempotency-Key "${key}" was already used for batch ${created.gone}, which no longer exists; send a new key to create a batch`);
  }
  const response = json(view(created.batch));
  if (created.replay) response.headers.set("x-idempotent-replay", "true");
  return response;
}

export function registerBatchRoutes(api: PluginApi, engine: BatchEngine, files: FileStore): void {
  const windows = api.config.batches.completion_windows;

  const ownBatch = async (caller: Caller, id: string): Promise<BatchRecord> => {
    const batch = await engine.store.get(id);
    if (!batch || batch.api !== "openai" || !caller.owns(batch.owner)) {
      throw errors.notFound(`no batch "${id.slice(0, 100)}"; list your batches with GET /v1/batches`);
    }
    return batch;
  };

  api.routes.post(
    "/v1/batches",
    answering(api.log, "batches.create", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const key = idempotencyKeyOf(c.req.raw);
      const body = (await readJsonBody(c.req.raw, { limit: BODY_LIMIT, expected: 'a JSON body {"input_file_id", "endpoint", "completion_window"}' })).value;
      if (!isRecord(body)) throw errors.badRequest('send a JSON object {"input_file_id", "endpoint", "completion_window"}');
      const endpoint = body.endpoint;
      const served = (path: string) => api.registry.matchPath(path) !== undefined;
      const endpoints = [...BATCH_ENDPOINTS, ...OPTIONAL_ENDPOINTS.filter(served)];
      if (typeof endpoint !== "string" || !endpoints.includes(endpoint)) {
        throw errors.badRequest(`"endpoint" must be one of ${endpoints.map((e) => `"${e}"`).join(", ")} (got ${JSON.stringify(endpoint ?? null)})`);
      }
      const window = body.completion_window;
      if (typeof window !== "string" || engine.windowMs(window) === undefined) {
        throw errors.badRequest(
          `"completion_window" must be one of ${windows.map((w) => `"${w}"`).join(", ")} (batches.completion_windows; got ${JSON.stringify(window ?? null)})`,
        );
      }
      const fileId = body.input_file_id;
      if (typeof fileId !== "string" || fileId === "") {
        throw errors.badRequest('"input_file_id" is missing: upload the JSONL file with POST /v1/files (purpose "batch") and send its id');
      }
      const file = await files.get(fileId);
      if (!file || !caller.owns(file.owner)) {
        throw errors.notFound(`"input_file_id": no file "${fileId.slice(0, 100)}"; upload the input with POST /v1/files and send the id it answers`);
      }
      if (file.purpose !== "batch") {
        throw errors.badRequest(`"input_file_id": file "${fileId}" has purpose "${file.purpose}"; a batch's input must be uploaded with purpose "batch"`);
      }
      const metadata = checkMetadata(body.metadata);
      const callback = await checkCallback(api, body.callback_url);
      const created = await engine.create(
        { owner: caller.owner, principal: caller.principal },
        { api: "openai", endpoint, input_file_id: fileId, completion_window: window, metadata, callback_url: callback },
        key,
      );
      return createdAnswer(created, batchView, key);
    }),
  );

  api.routes.get(
    "/v1/batches",
    answering(api.log, "batches.list", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const limit = listLimit(c.req.query("limit"), LIST_DEFAULT, LIST_MAX);
      const after = c.req.query("after") || undefined;
      if (after !== undefined && batchIdTime(after) === undefined) {
        throw errors.badRequest(`query parameter "after" must be a batch id (the last id of the previous page); got "${after.slice(0, 100)}"`);
      }
      const page = await engine.store.list(caller.owner, "openai", after, limit);
      return json({
        object: "list",
        data: page.items.map(batchView),
        has_more: page.hasMore,
        first_id: page.items[0]?.id ?? null,
        last_id: page.items.at(-1)?.id ?? null,
      });
    }),
  );

  api.routes.get(
    "/v1/batches/:id",
    answering(api.log, "batches.retrieve", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      return json(batchView(await ownBatch(caller, c.req.param("id") ?? "")));
    }),
  );

  api.routes.post(
    "/v1/batches/:id/cancel",
    answering(api.log, "batches.cancel", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const batch = await ownBatch(caller, c.req.param("id") ?? "");
      if (batch.status !== "validating" && batch.status !== "in_progress" && batch.status !== "cancelling" && batch.status !== "cancelled") {
        throw errors.conflict(`batch "${batch.id}" is ${batch.status}; only a validating or in_progress batch can be cancelled`);
      }
      return json(batchView(await engine.cancel(batch)));
    }),
  );
}
