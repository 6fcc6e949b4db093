/**
 * The stored responses' routes: `GET /v1/responses/{id}` (the Response), `DELETE
 * /v1/responses/{id}` (`{"id","object":"response","deleted":true}`) and `GET
 * /v1/responses/{id}/input_items` (a list page: `limit`, `order`, `after`). The caller is
 * identified as for every request; a response belongs to its creator's consumer, and another
 * consumer's is a 404 like an unknown or expired one (docs/design.md#consumers-and-ownership).
 */
import type { Context } from "hono";
import { errors, GatewayError, toErrorResponse } from "../../core/errors.ts";
import type { JsonObject } from "../../core/llm/json.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import type { ResponseStore, StoredResponse } from "./store.ts";

const LIST_DEFAULT = 20;
const LIST_MAX = 100;

/** `limit` of a list: a whole number from 1 to 100 (default 20), else a 400 naming it. */
function listLimit(text: string | undefined): number {
  if (text === undefined || text === "") return LIST_DEFAULT;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > LIST_MAX) {
    throw errors.badRequest(`query parameter "limit" must be a whole number from 1 to ${LIST_MAX}; got "${text.slice(0, 50)}"`);
  }
  return Number(text);
}

function listOrder(text: string | undefined): "asc" | "desc" {
  if (text === undefined || text === "" || text === "desc") return "desc";
  if (text === "asc") return "asc";
  throw errors.badRequest(`query parameter "order" must be "asc" or "desc"; got "${text.slice(0, 50)}"`);
}

/** One page of a response's input items. */
export function inputItemsPage(items: readonly JsonObject[], query: { limit?: string; order?: string; after?: string }): JsonObject {
  const limit = listLimit(query.limit);
  const ordered = listOrder(query.order) === "asc" ? [...items] : [...items].reverse();
  let start = 0;
  if (query.after !== undefined && query.after !== "") {
    const at = ordered.findIndex((item) => item.id === query.after);
    if (at < 0) throw errors.badRequest(`query parameter "after" must be the id of one of this response's input items; got "${query.after.slice(0, 100)}"`);
    start = at + 1;
  }
  const data = ordered.slice(start, start + limit);
  return {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: start + limit < ordered.length,
  };
}

export function registerResponseRoutes(api: PluginApi, store: ResponseStore): void {
  /** The caller's stored response named in the path, or the identify stage's answer. */
  const own = async (c: Context): Promise<StoredResponse | Response> => {
    const ctx = api.newContext(c.req.raw, "sync", "");
    const refused = await api.pipeline.runStage("identify", ctx);
    if (refused) return refused;
    const id = c.req.param("id") ?? "";
    const record = await store.get(id, ctx.principal.consumer);
    if (!record) throw errors.notFound(`Response with id '${id}' not found.`);
    return record;
  };
  const answering = (route: string, handler: (record: StoredResponse, c: Context) => Promise<Response> | Response) => async (c: Context) => {
    try {
      const record = await own(c);
      return record instanceof Response ? record : await handler(record, c);
    } catch (error) {
      if (error instanceof GatewayError) return toErrorResponse(error);
      api.log.error("responses_request_failed", { route, error });
      return toErrorResponse(errors.storeUnavailable("the response store is unavailable; try again"));
    }
  };

  api.routes.get("/v1/responses/:id", answering("responses.retrieve", (record) => Response.json(record.response)));
  api.routes.delete(
    "/v1/responses/:id",
    answering("responses.delete", async (record) => {
      await store.delete(String(record.response.id));
      return Response.json({ id: record.response.id, object: "response", deleted: true });
    }),
  );
  api.routes.get(
    "/v1/responses/:id/input_items",
    answering("responses.input_items", (record, c) => Response.json(inputItemsPage(record.input, c.req.query()))),
  );
}
