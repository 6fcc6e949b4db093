/**
 * `GET /-/batches`: every owner's batches, newest first, with their progress, for operators
 * (behind `admin.token` when one is set, like every `/-/` route). The console panel reads it.
 */
import { errors } from "../../core/errors.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import { answering, json, listLimit } from "./caller.ts";
import type { BatchEngine } from "./batches/engine.ts";
import { type BatchRecord, batchView } from "./batches/record.ts";
import { batchIdTime } from "./batches/store.ts";

const LIST_DEFAULT = 50;
const LIST_MAX = 500;

/** A batch as operators see it: the OpenAI object, its owner, its API and what runs now. */
export function adminView(batch: BatchRecord): Record<string, unknown> {
  return { ...batchView(batch), api: batch.api, owner: batch.owner, in_flight: batch.in_flight };
}

export function registerAdminRoutes(api: PluginApi, engine: BatchEngine): void {
  api.routes.get(
    "/-/batches",
    answering(api.log, "batches.admin", async (c) => {
      const limit = listLimit(c.req.query("limit"), LIST_DEFAULT, LIST_MAX);
      const after = c.req.query("after") || undefined;
      if (after !== undefined && batchIdTime(after) === undefined) {
        throw errors.badRequest(`query parameter "after" must be a batch id (the last id of the previous page); got "${after.slice(0, 100)}"`);
      }
      const page = await engine.store.list(undefined, undefined, after, limit);
      return json({
        object: "list",
        data: page.items.map(adminView),
        has_more: page.hasMore,
        first_id: page.items[0]?.id ?? null,
        last_id: page.items.at(-1)?.id ?? null,
      });
    }),
  );
}
