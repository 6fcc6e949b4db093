/**
 * Where the built-in plugins' parts go in the document: the order it has always had, so the
 * document reads (and compares) the same now that each plugin declares its own parts. A part
 * not named here (a new plugin's, a loaded one's) follows the named ones, by plugin name and
 * then in the order the plugin declares it: adding a plugin needs no entry here.
 */

/** Path parts, as `<plugin>/<part>` (`definePlugin({ openapi: { paths: { <part>: ... } } })`). */
export const PATH_LAYOUT: readonly string[] = [
  "sync-proxy/model-routes",
  "async-jobs/jobs",
  "docs/gateway",
  "sync-proxy/model-list",
  "usage/usage",
  "backend-health/backends",
  "auth/keys",
  "docs/docs",
  "async-jobs/queues",
  "webhooks/webhooks",
  "docs/config",
  "console/console",
];

/** Tags, after those of the service types. */
export const TAG_LAYOUT: readonly string[] = ["Gateway", "Models", "Jobs", "Usage", "Admin", "Keys", "Docs"];

/** Component schemas. */
export const SCHEMA_LAYOUT: readonly string[] = [
  "Error",
  "Expired",
  "Health",
  "ReloadResult",
  "ReloadError",
  "ErrorDetail",
  "JobAccepted",
  "JobRecord",
  "JobCancelled",
  "JobList",
  "PurgeRequest",
  "PurgeResult",
  "WebhookNotification",
  "Model",
  "ModelList",
  "UsageRecord",
  "UsageList",
  "BackendList",
  "UsageBucket",
  "UsageReport",
  "ChatCompletionRequest",
  "MessagesRequest",
  "MessagesError",
  "KeyCreate",
  "KeyUpdate",
  "Key",
  "KeyCreated",
  "KeyList",
  "KeyRotate",
  "KeyRotated",
  "KeyRevoked",
  "QueueList",
  "RelayDeadLetters",
  "RelayDiscardRequest",
  "RelayDiscardResult",
  "WebhookDelivery",
  "WebhookRetries",
  "WebhookDeadLetters",
  "RedeliverRequest",
  "RedeliverResult",
  "RunningConfig",
];
