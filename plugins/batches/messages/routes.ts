/**
 * Anthropic's Message Batches on the batch engine: `POST /v1/messages/batches`
 * (`{"requests": [{custom_id, params}]}`), retrieve, results (JSONL), cancel and list. The
 * requests stream into an input file (JSONL, one request a line) and are checked before the
 * answer: a bad request is a 400 naming its index, and nothing is created. Each line goes to
 * `/v1/messages` as its owner's request: as it is to a Messages-style backend, translated to a
 * chat backend, as inbound `/v1/messages` does.
 */
import { errors, GatewayError } from "../../../core/errors.ts";
import type { PluginApi } from "../../../core/plugins/types.ts";
import { answering, type Caller, identifyCaller, json, listLimit } from "../caller.ts";
import type { BatchEngine } from "../batches/engine.ts";
import type { BatchRecord } from "../batches/record.ts";
import { createdAnswer, idempotencyKeyOf } from "../batches/routes.ts";
import { batchIdTime } from "../batches/store.ts";
import type { FileStore } from "../files/store.ts";
import { capped } from "../upload-cap.ts";
import { requestsAsJsonl } from "./requests-jsonl.ts";
import { originOf } from "./results-url.ts";
import { messageBatchView, processingStatus } from "./view.ts";

const MIB = 1024 * 1024;
const LIST_DEFAULT = 20;
const LIST_MAX = 1000;
/** Problems named in a refused create's message. */
const PROBLEMS_SHOWN = 10;

export function registerMessageBatchRoutes(api: PluginApi, engine: BatchEngine, files: FileStore): void {
  const section = api.config.batches;
  const maxBytes = Math.floor(section.max_file_size_mb * MIB);
  // Message batches run for a day, as Anthropic's do, where that window is allowed.
  const window = section.completion_windows.includes("24h") ? "24h" : section.completion_windows[0];

  const ownBatch = async (caller: Caller, id: string): Promise<BatchRecord> => {
    const batch = await engine.store.get(id);
    if (!batch || batch.api !== "anthropic" || !caller.owns(batch.owner)) {
      throw errors.notFound(`no message batch "${id.slice(0, 100)}"; list yours with GET /v1/messages/batches`);
    }
    return batch;
  };

  api.routes.post(
    "/v1/messages/batches",
    answering(api.log, "message_batches.create", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const key = idempotencyKeyOf(c.req.raw);
      const body = c.req.raw.body;
      if (!body) throw errors.badRequest('send a JSON body {"requests": [{"custom_id": ..., "params": {...}}, ...]}');
      const shape = { found: false };
      const inputId = files.newFileId();
      const upload = capped(requestsAsJsonl(body, shape), maxBytes);
      let bytes: number;
      try {
        bytes = (await api.objects.put(files.objectKey(inputId), upload.stream, { contentType: "application/jsonl" })).size;
      } catch (error) {
        if (upload.exceeded()) {
          throw errors.tooLarge(`the requests are larger than ${section.max_file_size_mb} MB (batches.max_file_size_mb); split them into smaller batches`);
        }
        if (error instanceof GatewayError) throw error;
        throw errors.badRequest(`the request body could not be read: ${(error as Error).message}`);
      }
      const discard = () => api.objects.delete(files.objectKey(inputId)).catch(() => {});
      if (!shape.found) {
        await discard();
        throw errors.badRequest('the body has no "requests" array; send {"requests": [{"custom_id": ..., "params": {...}}, ...]}');
      }
      const input = await files.save(inputId, {
        owner: caller.owner,
        filename: "message_batch_requests.jsonl",
        purpose: "batch",
        contentType: "application/jsonl",
      }, bytes);
      const draft = engine.draft({ owner: caller.owner, principal: caller.principal }, {
        api: "anthropic",
        endpoint: "/v1/messages",
        input_file_id: input.id,
        completion_window: window,
        metadata: null,
      });
      const checked = await engine.check(draft);
      if (!checked.ok) {
        await files.delete(input);
        const shown = checked.errors.slice(0, PROBLEMS_SHOWN).map((e) => (e.line === null ? e.message : `requests[${e.line - 1}]: ${e.message}`));
        const more = checked.errors.length > PROBLEMS_SHOWN ? ` (and ${checked.errors.length - PROBLEMS_SHOWN} more)` : "";
        throw errors.badRequest(`the batch was not created: ${shown.join("; ")}${more}`);
      }
      const created = await engine.createChecked(draft, checked, key);
      if ("batch" in created && created.replay) await files.delete(input);
      return createdAnswer(created, (batch) => messageBatchView(batch, originOf(c.req.raw)), key);
    }),
  );

  api.routes.get(
    "/v1/messages/batches",
    answering(api.log, "message_batches.list", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const limit = listLimit(c.req.query("limit"), LIST_DEFAULT, LIST_MAX);
      if (c.req.query("before_id")) throw errors.badRequest('"before_id" is not supported here; page forward with "after_id"');
      const after = c.req.query("after_id") || undefined;
      if (after !== undefined && batchIdTime(after) === undefined) {
        throw errors.badRequest(`query parameter "after_id" must be a message batch id (the last_id of the previous page); got "${after.slice(0, 100)}"`);
      }
      const page = await engine.store.list(caller.owner, "anthropic", after, limit);
      const origin = originOf(c.req.raw);
      return json({
        data: page.items.map((b) => messageBatchView(b, origin)),
        has_more: page.hasMore,
        first_id: page.items[0]?.id ?? null,
        last_id: page.items.at(-1)?.id ?? null,
      });
    }),
  );

  api.routes.get(
    "/v1/messages/batches/:id",
    answering(api.log, "message_batches.retrieve", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      return json(messageBatchView(await ownBatch(caller, c.req.param("id") ?? ""), originOf(c.req.raw)));
    }),
  );

  api.routes.get(
    "/v1/messages/batches/:id/results",
    answering(api.log, "message_batches.results", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const batch = await ownBatch(caller, c.req.param("id") ?? "");
      if (processingStatus(batch) !== "ended") {
        throw errors.notFound(`message batch "${batch.id}" is ${processingStatus(batch)}; its results are ready once it has ended`);
      }
      const file = batch.has_output ? await files.get(batch.output_file_id) : null;
      const stored = file ? await files.content(file) : null;
      if (!stored) throw errors.notFound(`the results of message batch "${batch.id}" are gone (past batches.retention)`);
      return new Response(stored.body, { status: 200, headers: { "content-type": "application/binary" } });
    }),
  );

  api.routes.post(
    "/v1/messages/batches/:id/cancel",
    answering(api.log, "message_batches.cancel", async (c) => {
      const caller = await identifyCaller(api, c.req.raw);
      if (caller instanceof Response) return caller;
      const batch = await ownBatch(caller, c.req.param("id") ?? "");
      const after = processingStatus(batch) === "ended" ? batch : await engine.cancel(batch);
      return json(messageBatchView(after, originOf(c.req.raw)));
    }),
  );
}
