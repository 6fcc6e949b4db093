/**
 * Async job mode (spec mode 1): submission, the job store and queues, reading, cancelling,
 * listing and purging jobs, and the queues' admin view (queue depths, relay dead letters). It also runs in relay processes, where it only provides the
 * `jobs` service the relay works through.
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { fieldsOf } from "../../core/config/schema.ts";
import { consumerLabelFields, jobLifetimeFields, jobServiceFields, jobsSection } from "./config.ts";
import { queuesPanel } from "./console-panel.ts";
import { answering, registerManageRoutes } from "./manage.ts";
import { QueueAdmin, registerQueueAdminRoutes } from "./queues-admin.ts";
import { reportQueueDepth, submissionCounter } from "./metrics.ts";
import { asyncJobsOpenApi } from "./openapi.ts";
import { KvJobStore } from "./store.ts";
import { submitHandler } from "./submit.ts";

export default definePlugin({
  name: "async-jobs",
  // At submission: webhooks vets callback URLs, tracing links the job; auth says how a caller
  // names themselves. (Webhooks reads the job store in turn: both only at request time, so
  // neither goes first.)
  optionalDependsOn: ["auth", "otel", "webhooks"],
  section: jobsSection,
  serviceFields: jobServiceFields,
  sectionFields: [jobLifetimeFields, consumerLabelFields],
  roles: ["gateway", "relay"],
  openapi: asyncJobsOpenApi,
  consolePanels: [queuesPanel],
  setup(api) {
    const store = new KvJobStore({
      kv: api.kv,
      objects: api.objects,
      registry: api.registry,
      lifetimes: fieldsOf(api.config, jobLifetimeFields),
      jobs: api.section,
      clock: api.clock,
      ids: api.ids,
      log: api.log,
    });
    api.provide("jobs", store);
    if (api.role !== "gateway") return;

    api.onClose(reportQueueDepth(api.metrics, () => store.queueDepth()));
    const submissions = submissionCounter(api.metrics, api.config, fieldsOf(api.config, consumerLabelFields).consumer_labels);
    api.routes.post("/jobs/:type", submitHandler(api, store, submissions));
    registerManageRoutes(api, store);
    registerQueueAdminRoutes(api, new QueueAdmin(store, api), (name, handler) => answering(api.log, name, handler));
  },
});
