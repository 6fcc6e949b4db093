/** The core's own endpoints: liveness/readiness, Prometheus metrics, the running config, hot reload; and the request counter. */
import { type Context, Hono } from "hono";
import { redactConfig } from "./config/redact.ts";
import { EXPIRED, settleWithin } from "./deadline.ts";
import { errorBody, errorResponse, errors, toErrorResponse } from "./errors.ts";
import { counterChildren } from "./metric-labels.ts";
import type { Runtime, RuntimeDeps } from "./plugins/host.ts";

/**
 * What a hot reload did. A refusal says why: `config`, the file (or a plugin it names) is wrong
 * and only an edit fixes it; `failure`, building the new runtime failed for another reason (a
 * plugin's setup threw).
 */
export type ReloadOutcome = { ok: true; services: number } | { ok: false; cause: "config" | "failure"; problems: string[] };

export interface OpsActions {
  reload(): Promise<ReloadOutcome>;
}

/**
 * How long a readiness check waits for a store's ping: a store that hangs (a frozen Redis,
 * an S3 endpoint that accepts and never answers) makes `/health?ready=1` answer 503 within
 * this bound, instead of hanging the probe, which an orchestrator would read as no answer at all.
 */
export const READINESS_CHECK_TIMEOUT_MS = 2_000;

async function ping(name: string, check: () => Promise<void>): Promise<[string, string]> {
  const answered = Promise.resolve().then(check).then(
    () => "ok",
    (error: unknown) => `down: ${(error as Error).message}`,
  );
  const outcome = await settleWithin(answered, READINESS_CHECK_TIMEOUT_MS);
  return [name, outcome === EXPIRED ? `down: no answer within ${READINESS_CHECK_TIMEOUT_MS} ms` : outcome];
}

type OpsDeps = Pick<RuntimeDeps, "kv" | "objects" | "metrics">;

/** `GET /health`: liveness; with `?ready=1` also pings both stores (readiness). */
async function health(c: Context, { kv, objects }: OpsDeps): Promise<Response> {
  const ready = c.req.query("ready");
  if (ready === undefined || ready === "0" || ready === "false") return c.json({ status: "ok" });
  const checks = Object.fromEntries(await Promise.all([ping("kv", () => kv.ping()), ping("objects", () => objects.ping())]));
  const up = Object.values(checks).every((v) => v === "ok");
  return c.json({ status: up ? "ok" : "unavailable", checks }, up ? 200 : 503);
}

/** `GET /metrics`: the process's registry as Prometheus text. */
async function metricsText(c: Context, { metrics }: OpsDeps): Promise<Response> {
  return c.body(await metrics.text(), 200, { "content-type": metrics.contentType() });
}

/**
 * The listener of a process that serves no gateway API (a standalone relay's
 * `relay.metrics_addr`): `GET /health` and `GET /metrics`, answered exactly as the gateway
 * answers them, from the process's one registry and stores; anything else is a 404.
 */
export function createOpsApp(deps: OpsDeps): Hono {
  const app = new Hono();
  app.get("/health", (c) => health(c, deps));
  app.get("/metrics", (c) => metricsText(c, deps));
  app.notFound((c) => errors.noRoute(c.req.method, new URL(c.req.url).pathname).toResponse());
  app.onError((error) => toErrorResponse(error));
  return app;
}

export function registerOpsRoutes(runtime: Runtime, actions: OpsActions): void {
  const { app } = runtime;
  const { metrics, clock } = runtime.deps;
  const requests = metrics.counter({
    name: "svc_gateway_requests_total",
    help: "Requests answered by the gateway, by status, mode (sync, llm, async, admin) and service type",
    labelNames: ["status", "mode", "service_type"],
  });

  // Label sets prepared once (see metric-labels.ts); built in labelNames order.
  const requestsFor = counterChildren(requests);

  app.use("*", async function countRequests(c, next) {
    const started = clock.now();
    await next();
    const ctx = runtime.contextOf(c.req.raw);
    const labels = { status: String(c.res.status), mode: ctx?.mode ?? "admin", service_type: ctx?.serviceType ?? "" };
    requestsFor(labels).inc();
    runtime.emit("request.finished", {
      mode: ctx?.mode ?? "admin",
      serviceType: labels.service_type,
      model: ctx?.service?.model ?? "",
      consumer: ctx?.principal.consumer,
      userType: ctx?.principal.userType,
      status: c.res.status,
      durationMs: clock.now() - started,
    });
  });

  // Before every route: `/v1/../-/reload` must not reach the reload route on runtimes that normalise.
  app.use("*", async function refuseUnnormalizedPaths(c, next) {
    const refusal = runtime.refusalOf(c.req.raw);
    if (refusal) return errorResponse(400, "invalid_request_error", refusal, {}, "invalid_request");
    await next();
  });

  app.get("/health", (c) => health(c, runtime.deps));
  app.get("/metrics", (c) => metricsText(c, runtime.deps));

  // The running config (not the file, which may have changed since), secrets redacted.
  app.get("/-/config", (c) => c.json(redactConfig(runtime.runningConfig())));

  app.post("/-/reload", async (c) => {
    const result = await actions.reload();
    if (result.ok) return c.json({ status: "reloaded", services: result.services });
    const message = `config not reloaded, the previous one stays active: ${result.problems.join("; ")}`;
    // A 500 either way; the type and code tell a file to edit (config_error, config_invalid) from
    // a plugin that failed for another reason (api_error, reload_failed).
    if (result.cause === "config") return c.json({ ...errorBody(500, "config_error", message, "config_invalid"), problems: result.problems }, 500);
    return c.json({ ...errorBody(500, "api_error", message, "reload_failed"), problems: result.problems }, 500);
  });
}
