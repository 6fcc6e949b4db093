/**
 * Async job mode (spec mode 1): submission, the job store and queues, reading, cancelling,
 * listing and purging jobs, and the queues' admin view (queue depths, relay dead letters). It also runs in relay processes, where it only provides the
 * `jobs` service the relay works through.
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { jobServiceFields, jobsSection } from "./config.ts";
import { queuesPanel } from "./console-panel.ts";
import { answering, registerManageRoutes } from "./manage.ts";
import { QueueAdmin, registerQueueAdminRoutes } from "./queues-admin.ts";
import { reportQueueDepth, submissionCounter } from "./metrics.ts";
import { asyncJobsOpenApi } from "./openapi.ts";
import { KvJobStore } from "./store.ts";
import { submitHandler } from "./submit.ts";

export default definePlugin({
  name: "async-jobs",
  // At submission: webhooks vets callback URLs, tracing links the job.
  // (Webhooks reads the job store in turn: both only at request time, so neither goes first.)
  optionalDependsOn: ["otel", "webhooks"],
  section: jobsSection,
  serviceFields: jobServiceFields,
  roles: ["gateway", "relay"],
  openapi: asyncJobsOpenApi,
  consolePanels: [queuesPanel],
  setup(api) {
    const store = new KvJobStore({
      kv: api.kv,
      objects: api.objects,
      registry: api.registry,
      config: api.config,
      clock: api.clock,
      ids: api.ids,
      log: api.log,
    });
    api.provide("jobs", store);
    if (api.role !== "gateway") return;

    api.onClose(reportQueueDepth(api.metrics, () => store.queueDepth()));
    api.routes.post("/jobs/:type", submitHandler(api, store, submissionCounter(api.metrics, api.config)));
    registerManageRoutes(api, store);
    registerQueueAdminRoutes(api, new QueueAdmin(store, api), (name, handler) => answering(api.log, name, handler));
  },
});
