/**
 * Backend health (docs/backend-health.md): the `backendHealth` service the LLM proxy and the sync
 * direct proxy hand their failover loop (core/proxy/backends.ts), with its retry rounds; the
 * metrics `svc_backend_ejections_total`, `svc_backend_ejected` and
 * `svc_backend_retry_rounds_total`, and `GET /-/backends`.
 * The state lives in this runtime: a reload starts with every backend healthy.
 */
import { backendAddress } from "../../core/llm/registry.ts";
import { durationMs } from "../../core/config/duration.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { configuredBackends, hostPort, publicUrl } from "./backends-list.ts";
import { backendHealthSection } from "./config.ts";
import { backendsPanel } from "./console-panel.ts";
import { backendHealthOpenApi } from "./openapi.ts";
import { retryRounds } from "./retry.ts";
import { HealthTracker } from "./tracker.ts";

export default definePlugin({
  name: "backend-health",
  section: backendHealthSection,
  // Its providers' default addresses, for services that name none.
  optionalDependsOn: ["providers"],
  openapi: backendHealthOpenApi,
  consolePanels: [backendsPanel],
  setup(api) {
    const section = api.config.backend_health;
    const ejections = api.metrics.counter({
      name: "svc_backend_ejections_total",
      help: "Backends set to sit out (a Retry-After or an ejection for failures in a row)",
      labelNames: ["service_type", "backend"],
    });
    const rounds = api.metrics.counter({
      name: "svc_backend_retry_rounds_total",
      help: "Retry rounds started: passes over a service's backends after one in which every backend failed",
      labelNames: ["service_type"],
    });
    const retry = section.retry_rounds > 1
      ? retryRounds(
        {
          rounds: section.retry_rounds,
          deadlineMs: durationMs(section.retry_deadline),
          backoffMs: durationMs(section.retry_backoff),
          backoffMaxMs: durationMs(section.retry_backoff_max),
        },
        api.clock,
        (serviceType) => rounds.inc({ service_type: serviceType }),
      )
      : undefined;
    const tracker = new HealthTracker(
      {
        failoverStatuses: section.failover_statuses,
        retryAfterMaxMs: durationMs(section.retry_after_max),
        consecutiveFailures: section.consecutive_failures,
        ejectionMs: durationMs(section.ejection_time),
        maxEjectionMs: durationMs(section.max_ejection_time),
        maxEjectedPercent: section.max_ejected_percent,
      },
      api.clock,
      (serviceType, url) => ejections.inc({ service_type: serviceType, backend: hostPort(url) }),
      retry,
    );
    api.provide("backendHealth", tracker);

    const backends = () => {
      const registry = api.has("providers") ? api.use("providers") : undefined;
      return configuredBackends(
        api.config.services,
        (provider) => registry?.get(provider)?.defaultUrl ?? "",
        (service, backend) => (registry ? backendAddress(registry, service, backend) : backend.url),
      );
    };
    api.metrics.gauge({
      name: "svc_backend_ejected",
      help: "1 while a backend sits out (Retry-After or ejection), else 0",
      labelNames: ["service_type", "backend"],
      // Each worker tracks its own backends: out when any of them has it out.
      aggregator: "max",
      collect() {
        this.reset();
        const now = api.clock.now();
        for (const backend of backends()) {
          const labels = { service_type: backend.serviceType, backend: hostPort(backend.url) };
          // Two services' backends on one host:port: ejected when either is.
          if (tracker.sittingOut(backend.url, now)) this.set(labels, 1);
          else this.inc(labels, 0);
        }
      },
    });

    const since = new Date(api.clock.now()).toISOString();
    api.routes.get("/-/backends", (c) => {
      const now = api.clock.now();
      return c.json({
        since,
        backends: backends().map((backend) => {
          const state = tracker.state(backend.url);
          const counts = tracker.counts(backend.url);
          const ejected = tracker.sittingOut(backend.url, now);
          return {
            service_type: backend.serviceType,
            model: backend.model,
            url: publicUrl(backend.url),
            state: ejected ? "ejected" : "healthy",
            ejected_until: ejected && state ? new Date(state.until).toISOString() : null,
            consecutive_failures: state?.consecutiveFailures ?? 0,
            ejections: counts.ejections,
            requests: counts.requests,
            failures: counts.failures,
          };
        }),
      });
    });
  },
});
