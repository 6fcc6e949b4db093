/**
 * Every key async jobs use, in the KV store and in the object store. The spec names the
 * queue keys (`relay:<model>`, `relay:<model>:processing`, `relay:<model>:deadletter`);
 * the rest are ours. Other plugins reach these through `api.use("jobs").keys`.
 *
 * KV store
 * | key                               | type   | holds                                        | TTL
 * |-----------------------------------|--------|----------------------------------------------|-----------------------------------------------
 * | job:<id>                          | hash   | the job record (types.ts JobRecord)          | lifecycle.job_ttl for its status, reset on every status change (2 h safety net); processing: extended by each lease renewal to at least lease + the pending TTL
 * | job-expired:<id>                  | string | tombstone {"service_type","consumer"}        | record TTL + jobs.expired_marker_ttl (410 while it outlives the record)
 * | job-cancel:<id>                   | string | "1": DELETE asked the relay to stop          | the processing TTL
 * | jobs:consumer:<consumer>          | zset   | job id -> created_at ms (GET /jobs)          | the longest TTL of its jobs (extended, never shortened); stale members pruned on write and read
 * | relay:<model>                     | list   | pending job ids; head = next to run          | none (entries leave when claimed, cancelled or purged)
 * | relay:<model>:processing          | list   | ids a relay has claimed                      | none (entries leave when the relay finishes or the GC reaper reclaims them)
 * | relay:<model>:deadletter          | list   | ids the GC reaper gave up on                 | none (not self-draining; an operator discards them: POST /-/relay/deadletter/discard)
 * | relay-lease:<id>                  | string | the claiming relay's token                   | relay.lease_seconds, renewed every third of it while the backend works
 * | relay-retry:<model>               | zset   | job id -> due ms: pending jobs waiting to be retried (services[].retry) | none (a relay's claim moves due entries to the queue head; cancel and purge remove them)
 * | idempotency:<consumer>:<key>      | string | the 2.1 body of the job the key created      | jobs.idempotency_ttl
 * | jobs:notify-outbox                | zset   | job id -> sweep-after ms: ended with a callback_url, webhook not yet persisted | none (the webhooks plugin removes an entry when it persists the delivery, or drops it when the job is gone)
 *
 * `<consumer>` is URI-encoded (so it holds no ":"); "" for anonymous callers. `<model>` is
 * the model alias, or the service type for a service without one.
 *
 * Object store
 * | key                 | holds
 * |---------------------|--------------------------------------------------------------
 * | jobs/<id>/input     | the uploaded file (deleted when the job reaches a terminal state)
 * | jobs/<id>/result    | the result JSON of a completed job (deleted with the record)
 */

const PREFIX = {
  record: "job:",
  tombstone: "job-expired:",
  cancel: "job-cancel:",
  consumerIndex: "jobs:consumer:",
  notifyOutbox: "jobs:notify-outbox",
  queue: "relay:",
  lease: "relay-lease:",
  // Not under "relay:": the GC reads every "relay:" key as a list of a model's queue.
  retry: "relay-retry:",
  idempotency: "idempotency:",
  objects: "jobs/",
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const jobKeys = {
  record: (id: string) => `${PREFIX.record}${id}`,
  /** The prefix purge scans: it matches only record keys (the other job keys use other prefixes). */
  recordPrefix: PREFIX.record,
  /** The job id of a record key, or undefined for any other key. */
  idOfRecordKey(key: string): string | undefined {
    const id = key.slice(PREFIX.record.length);
    return key.startsWith(PREFIX.record) && UUID.test(id) ? id : undefined;
  },
  tombstone: (id: string) => `${PREFIX.tombstone}${id}`,
  cancel: (id: string) => `${PREFIX.cancel}${id}`,
  consumerIndex: (consumer: string) => `${PREFIX.consumerIndex}${encodeURIComponent(consumer)}`,
  /**
   * The notification outbox: the terminal status change adds a job with a callback_url in
   * the same atomic op, so its webhook survives a crash before the delivery is persisted.
   */
  notifyOutbox: PREFIX.notifyOutbox,
  queue: (model: string) => `${PREFIX.queue}${model}`,
  processing: (model: string) => `${PREFIX.queue}${model}:processing`,
  deadletter: (model: string) => `${PREFIX.queue}${model}:deadletter`,
  lease: (id: string) => `${PREFIX.lease}${id}`,
  leasePrefix: PREFIX.lease,
  /** Jobs whose attempt failed transiently, scored by when they may run again. */
  retry: (model: string) => `${PREFIX.retry}${model}`,
  idempotency: (consumer: string | undefined, key: string) => `${PREFIX.idempotency}${encodeURIComponent(consumer ?? "")}:${key}`,

  inputObject: (id: string) => `${PREFIX.objects}${id}/input`,
  resultObject: (id: string) => `${PREFIX.objects}${id}/result`,
  /** The prefix every job file lives under (GC orphan cleanup lists it). */
  objectPrefix: PREFIX.objects,
  /** The job id an object key belongs to, or undefined for a key outside the layout. */
  idOfObjectKey(key: string): string | undefined {
    if (!key.startsWith(PREFIX.objects)) return undefined;
    const id = key.slice(PREFIX.objects.length).split("/")[0];
    return UUID.test(id) ? id : undefined;
  },
  isJobId: (id: string) => UUID.test(id),
};

export type JobKeys = typeof jobKeys;
