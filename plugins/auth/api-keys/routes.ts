/**
 * The admin API of API keys, `/-/keys` (docs/api-keys.md). The admin token guards it like
 * every `/-/*` endpoint (the admin plugin); with no admin token configured it refuses to run
 * at all (403), since it hands out credentials. Every change is written to the audit log by
 * the audit-log plugin's middleware (any POST, PATCH or DELETE under `/-/`). The secret is
 * in the answer of create and rotate only; the store never holds it.
 */
import type { Context } from "hono";
import { parseDuration } from "../../../core/config/duration.ts";
import { errors, GatewayError } from "../../../core/errors.ts";
import { pageParams } from "../../../core/pagination.ts";
import type { PluginApi } from "../../../core/plugins/types.ts";
import { readAdminJson } from "../../../core/request-body/admin-json.ts";
import { applyPatch, parseKeyBody } from "./input.ts";
import type { KeyLookup } from "./lookup.ts";
import { type KeyFields, type KeyRecord, publicView } from "./record.ts";
import { type KeyHasher, newKeySecret, visiblePrefix } from "./secret.ts";
import type { KeyStore } from "./store.ts";

/** How long a rotated-out secret keeps working unless the rotate call says otherwise. */
export const DEFAULT_ROTATION_GRACE = "1h";

export interface KeyRouteDeps {
  store: KeyStore;
  lookup: KeyLookup;
  hash: KeyHasher;
  adminTokenConfigured: boolean;
}

async function readBody(c: Context, expected: string, optional = false): Promise<unknown> {
  if (optional && (c.req.header("content-length") === "0" || !c.req.raw.body)) return {};
  return await readAdminJson(c.req.raw, expected);
}

export function registerKeyRoutes(api: PluginApi, deps: KeyRouteDeps): void {
  const { store, lookup, hash } = deps;
  const now = () => api.clock.now();
  const iso = () => new Date(now()).toISOString();

  function route(handler: (c: Context) => Promise<Response>) {
    return async function keysEndpoint(c: Context): Promise<Response> {
      try {
        if (!deps.adminTokenConfigured) {
          throw errors.forbidden(
            "the key admin API needs an admin token: set admin.token (e.g. admin: {token: ${GATEWAY_ADMIN_TOKEN}}) and call it with Authorization: Bearer <admin.token>",
          );
        }
        return await handler(c);
      } catch (error) {
        if (error instanceof GatewayError) return error.toResponse();
        api.log.error("api_keys_admin_failed", { path: c.req.path, error });
        return errors.storeUnavailable("API keys cannot be read or written right now: the key-value store failed; retry later").toResponse();
      }
    };
  }

  async function existing(c: Context): Promise<KeyRecord> {
    const id = c.req.param("id") ?? "";
    const record = await store.byId(id);
    if (!record) throw errors.notFound(`no API key with id "${id}"; GET /-/keys lists them`);
    return record;
  }

  function refuseRevoked(record: KeyRecord): void {
    if (record.status === "revoked") throw errors.conflict(`API key "${record.id}" is revoked; a revoked key cannot be changed or rotated, create a new one`);
  }

  api.routes.post(
    "/-/keys",
    route(async (c) => {
      const patch = parseKeyBody(await readBody(c, 'a JSON body {"consumer": "team-a"}'), true, now());
      const fields = applyPatch({ consumer: "", groups: [], roles: [], scopes: [], models: [], enabled: true, metadata: {} }, patch);
      const key = newKeySecret();
      const at = iso();
      const record: KeyRecord = {
        ...fields,
        id: `key_${api.ids.newId().replace(/-/g, "")}`,
        prefix: visiblePrefix(key),
        status: "active",
        created_at: at,
        updated_at: at,
        hash: await hash(key),
      };
      await store.save(record, true);
      return c.json({ ...publicView(record), key }, 201);
    }),
  );

  api.routes.get(
    "/-/keys",
    route(async (c) => {
      const { limit, offset } = pageParams((name) => c.req.query(name), { defaultLimit: 20, maxLimit: 100 });
      const consumer = c.req.query("consumer") || undefined;
      const all = (await store.all()).filter((record) => consumer === undefined || record.consumer === consumer);
      return c.json({ total: all.length, limit, offset, keys: all.slice(offset, offset + limit).map(publicView) });
    }),
  );

  api.routes.get(
    "/-/keys/:id",
    route(async (c) => c.json(publicView(await existing(c)))),
  );

  api.routes.patch(
    "/-/keys/:id",
    route(async (c) => {
      const record = await existing(c);
      refuseRevoked(record);
      const patch = parseKeyBody(await readBody(c, 'a JSON body {"enabled": false}'), false, now());
      const fields: KeyFields = applyPatch(record, patch);
      const next: KeyRecord = { ...record, ...fields, updated_at: iso() };
      for (const field of ["user_type", "expires_at", "limits"] as const) if (!(field in fields)) delete next[field];
      await store.save(next);
      lookup.forget(record.hash, record.previous_hash);
      return c.json(publicView(next));
    }),
  );

  api.routes.post(
    "/-/keys/:id/rotate",
    route(async (c) => {
      const record = await existing(c);
      refuseRevoked(record);
      const body = await readBody(c, 'a JSON body {"grace_period": "1h"} (or none)', true);
      const grace = typeof body === "object" && body !== null && "grace_period" in body
        ? (body as { grace_period: unknown }).grace_period
        : DEFAULT_ROTATION_GRACE;
      const graceMs = typeof grace === "string" ? parseDuration(grace) : undefined;
      if (typeof graceMs !== "number") throw errors.badRequest('grace_period: must be a duration such as "1h" or "0s" (the old secret stops at once)');
      // A secret rotated out earlier stops now: only the one just replaced gets a grace period.
      if (record.previous_hash) await store.save({ ...record, previous_valid_until: iso() });
      const key = newKeySecret();
      const previousValidUntil = new Date(now() + graceMs).toISOString();
      const next: KeyRecord = {
        ...record,
        prefix: visiblePrefix(key),
        hash: await hash(key),
        previous_hash: record.hash,
        previous_valid_until: previousValidUntil,
        updated_at: iso(),
      };
      await store.save(next);
      lookup.forget(record.hash, record.previous_hash);
      return c.json({ id: next.id, key, prefix: next.prefix, previous_valid_until: previousValidUntil });
    }),
  );

  api.routes.delete(
    "/-/keys/:id",
    route(async (c) => {
      const record = await existing(c);
      if (record.status !== "revoked") {
        const at = iso();
        await store.save({ ...record, status: "revoked", revoked_at: at, updated_at: at });
        lookup.forget(record.hash, record.previous_hash);
      }
      return c.json({ id: record.id, status: "revoked" });
    }),
  );
}
