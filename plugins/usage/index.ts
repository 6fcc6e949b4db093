/**
 * Usage tracking and reporting (docs/design.md#usage): per consumer per service type
 * cumulative counters, cross-consumer calendar buckets, and the endpoints that show them.
 * Nothing is written when `server.consumer_header` is not configured
 * (docs/design.md#usage-retention); the endpoints then answer 501. A request is counted as its
 * answer ends, and is visible by the time the client has the whole answer (see recorder.ts); the
 * store layout is in keys.ts.
 *
 * It also runs in relay processes, where it records the inference seconds of the jobs that
 * relay ran, and the requests it runs when requests run there (`api.runsRequests`: a relay
 * running batch lines); the endpoints are the gateway's.
 */
import { durationMs, formatDuration } from "../../core/config/duration.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { usageSection } from "./config.ts";
import { usagePanel } from "./console-panel.ts";
import type {} from "../../core/jobs/types.ts";
import type {} from "../../core/limits/windows.ts";
import { usageOpenApi } from "./openapi.ts";
import { UsageRecorder } from "./recorder.ts";
import { UsageRecords } from "./records.ts";
import { registerUsageRoutes } from "./routes.ts";

export default definePlugin({
  name: "usage",
  // Shows the limits' live windows, and costs where pricing is on; auth says how a caller names themselves.
  optionalDependsOn: ["auth", "limits", "pricing"],
  section: usageSection,
  roles: ["gateway", "relay"],
  openapi: usageOpenApi,
  consolePanels: [usagePanel],
  setup(api) {
    const retentionMs = durationMs(api.config.usage.retention);
    if (api.config.server.consumer_header !== "") {
      const recorder = new UsageRecorder({ kv: api.kv, clock: api.clock, log: api.log, retentionMs });
      api.on("relay.processed", (event) => recorder.processed(event));
      // Counts gathered in the last turn are written before the stores close.
      api.onClose(() => recorder.flush());
      if (api.runsRequests) {
        api.on("llm.usage", (event) => recorder.tokens(event));
        api.on("job.submitted", ({ job }) => recorder.submitted(job));
        // A request's counts are visible once its client has the whole answer: the answer's
        // end waits for the write they are part of (`usage.write: after_answer`: it does not
        // wait, the counts land a few ms later). In `admit`, which only a request the
        // pipeline runs to its end reaches (after `identify`: the caller is known).
        const waitForWrite = api.config.usage.write === "before_answer";
        api.stage("admit", function countUsageAtEnd(ctx) {
          const consumer = ctx.principal.consumer;
          if (consumer === undefined || consumer === "") return;
          const key = ctx.principal.keyId;
          ctx.beforeEnd((status) => {
            const written = recorder.requestEnded({
              mode: ctx.mode,
              origin: ctx.origin,
              serviceType: ctx.serviceType,
              consumer,
              model: ctx.service?.model ?? "",
              key,
              // Read as the answer ends: a stream refused after its 200 marks it on the way.
              outcome: ctx.outcome,
            }, status);
            return waitForWrite ? written : undefined;
          });
        });
      }
    }
    if (api.role !== "gateway") return;
    const records = new UsageRecords({
      kv: api.kv,
      services: api.config.services,
      retention: retentionMs > 0 ? formatDuration(retentionMs) : "all-time",
      priced: api.has("pricing"),
      // Set up before this plugin when active (plugin order), so the windows are there.
      windows: api.has("limitWindows") ? api.use("limitWindows") : undefined,
    });
    registerUsageRoutes(api, records);
  },
});
