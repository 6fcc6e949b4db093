/**
 * Generated API docs (docs/design.md#generated-api-docs, docs/design.md#versioning): `GET
 * /openapi.yaml` built from this runtime's registry (so a reload regenerates it) for the caller's
 * view of the models, the Swagger UI page at `GET /docs` with its assets served from the
 * `swagger-ui-dist` package, and each model backend's own document under
 * `/docs/spec/{type}/{model}` and `/swagger/{type}/{model}`.
 */
import { stringify } from "yaml";
import { errors, GatewayError, toErrorResponse } from "../../core/errors.ts";
import { callerAuthOf } from "../../core/pipeline/caller-auth.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { docsServiceFields } from "./config.ts";
import { loadAssets } from "./assets.ts";
import { audienceOf } from "./audience.ts";
import { BackendSpecs } from "./backend-spec.ts";
import { assembleDocument } from "./openapi/assemble.ts";
import { docsOpenApi } from "./openapi/own-part.ts";
import { documentParts } from "./openapi/parts.ts";
import { docsPage, INIT_SCRIPT, PAGE_CSP, UI_ASSETS } from "./page.ts";
import { servedRoutes } from "./served-routes.ts";

/** Distinct audiences kept per runtime; beyond it the oldest document is dropped. */
const MAX_CACHED_DOCUMENTS = 64;

export default definePlugin({
  name: "docs",
  // Documents the sync routes (sync-proxy) and the credentials callers send (auth) at request
  // time; its routes still go before the sync proxy's catch-all (a configured wildcard cannot
  // shadow them).
  optionalDependsOn: ["auth", "sync-proxy"],
  before: ["sync-proxy"],
  serviceFields: docsServiceFields,
  openapi: docsOpenApi,
  async setup(api) {
    // Every installed plugin's part (this plugin's own included), checked once at start.
    const parts = documentParts(api.contributions);
    // Read on the first page load, not at start: ~2 MB that every process would otherwise hold
    // whether or not anyone opens the page. A failure only disables the page (and is retried).
    const assets = () =>
      loadAssets((path) => api.readAsset(path)).catch((error: unknown) => {
        api.log.warn("docs_assets_unavailable", { error, message: "GET /docs answers 503; /openapi.yaml still works" });
        return undefined;
      });
    const specs = new BackendSpecs({ fetch: api.fetch, now: () => api.clock.now(), ttlMs: 60_000, timeoutMs: 10_000 });
    const documents = new Map<string, string>();
    const served = servedRoutes(api.routes);

    api.routes.get("/openapi.yaml", async (c) => {
      const audience = await audienceOf(api, c.req.raw);
      let text = documents.get(audience.key);
      if (text === undefined) {
        // Built on first use, once every plugin has registered its routes.
        const authMode = callerAuthOf(api)?.mode ?? "none";
        const document = assembleDocument({ config: api.config, authMode, visible: audience.visible, served, syncProxy: api.has("syncModes") }, parts);
        text = stringify(document, { aliasDuplicateObjects: false, lineWidth: 0 });
        if (documents.size >= MAX_CACHED_DOCUMENTS) documents.delete(documents.keys().next().value ?? "");
        documents.set(audience.key, text);
      }
      return c.body(text, 200, { "content-type": "application/yaml; charset=utf-8", "cache-control": "private, no-cache" });
    });

    api.routes.get("/docs", async (c) => {
      if (!(await assets())) return errors.overloaded("the API docs page is unavailable: its Swagger UI files could not be read (see the log)").toResponse();
      const { visible } = await audienceOf(api, c.req.raw);
      const documented = visible.filter((s) => s.swagger_url !== "" && s.model !== "");
      return c.html(docsPage(documented), 200, { "content-security-policy": PAGE_CSP, "cache-control": "private, no-cache" });
    });

    api.routes.get("/docs/assets/:file", async (c) => {
      const file = c.req.param("file");
      if (file === "init.js") return c.body(INIT_SCRIPT, 200, { "content-type": "text/javascript; charset=utf-8" });
      const type = UI_ASSETS[file];
      const body = type ? (await assets())?.get(file) : undefined;
      if (!body || !type) return errors.notFound(`no docs asset "${file}"`).toResponse();
      return c.body(body, 200, { "content-type": type, "cache-control": "public, max-age=3600" });
    });

    for (const prefix of ["/docs/spec", "/swagger"]) {
      api.routes.get(`${prefix}/:type/:model`, async (c) => {
        const type = c.req.param("type");
        const model = c.req.param("model");
        try {
          const { visible } = await audienceOf(api, c.req.raw);
          // A hidden model looks like one that does not exist (docs/design.md#model-visibility).
          const service = visible.find((s) => s.type === type && s.model === model);
          if (!service) throw errors.modelNotFound(`no model "${model}" of service type "${type}"`);
          if (service.swagger_url === "") throw errors.notFound(`model "${model}" has no API document: its service sets no swagger_url`);
          return c.body(await specs.get(service), 200, { "content-type": "application/json; charset=utf-8" });
        } catch (error) {
          if (!(error instanceof GatewayError)) api.log.error("backend_spec_failed", { type, model, error });
          else if (error.status === 502) api.log.warn("backend_spec_unavailable", { type, model, message: error.message });
          return toErrorResponse(error);
        }
      });
    }
  },
});
