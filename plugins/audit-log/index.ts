/**
 * The audit log (`audit_log` in docs/design.md#other-settings, hot-reloadable since a reload builds
 * a new runtime): one JSON log line, event "audit", per state-changing request and per admin
 * read, with the principal, method, path, status and outcome. It is written after the
 * response is ready and never changes it.
 */
import { isSpanContextValid, trace } from "@opentelemetry/api";
import { definePlugin } from "../../core/plugins/types.ts";
import { auditLogSection } from "./config.ts";
import { copyForDetails, detailsOf } from "./details.ts";
import { principalOf } from "./principal.ts";
import { auditKind, outcomeOf } from "./scope.ts";

export default definePlugin({
  name: "audit-log",
  // Its middleware wraps every request inside the trace (the audit line carries the trace id)
  // and outside everything else.
  // Outside the admin token check too (a refused admin call is audited); the admin service,
  // used at request time only, says whether a call carried the token.
  after: ["otel"],
  before: ["admin"],
  optionalDependsOn: ["admin"],
  layer: "audit",
  section: auditLogSection,
  enabled: (config) => config.audit_log.enabled,
  setup(api) {
    api.middleware(async function auditRequest(c, next) {
      const path = new URL(c.req.url).pathname;
      const kind = auditKind(c.req.method, path);
      if (!kind) return await next();
      const started = api.clock.now();
      await next();
      const response = c.res;
      const copy = kind === "change" ? copyForDetails(response) : undefined;
      // The trace id ties the line to the request's trace when tracing is on.
      const spanContext = trace.getActiveSpan()?.spanContext();
      const traceId = spanContext && isSpanContextValid(spanContext) ? spanContext.traceId : undefined;
      // Not awaited: identifying an admin caller may verify a token, which must not delay the answer.
      void (async () => {
        try {
          api.log.info("audit", {
            kind,
            principal: await principalOf(api, c.req.raw),
            method: c.req.method,
            path,
            status: response.status,
            outcome: outcomeOf(response.status),
            duration_ms: api.clock.now() - started,
            ...(await detailsOf(copy)),
            ...(c.req.header("x-forwarded-for") ? { forwarded_for: c.req.header("x-forwarded-for") } : {}),
            ...(traceId ? { trace_id: traceId } : {}),
          });
        } catch (error) {
          api.log.error("audit_failed", { method: c.req.method, path, error });
        }
      })();
    });
  },
});
