/**
 * Every key the batch APIs use, in the key-value store and in the object store. All KV keys
 * start with "batch:", so on a Redis Cluster they share one hash slot (core/stores/hash-tags.ts):
 * a line's claim reads its batch's record beside its model's queue in one atomic step.
 *
 * KV store
 * | key                          | type   | holds                                                        | TTL
 * |------------------------------|--------|--------------------------------------------------------------|------------------------------
 * | batch:file:<id>              | hash   | a file's record (files/record.ts)                            | batches.retention
 * | batch:files:<owner>          | zset   | file id -> minus its creation ms (newest first)               | none (members pruned when their record is gone)
 * | batch:file-expiry            | zset   | file id -> when it is deleted (ms)                           | none (the sweep takes due members)
 * | batch:rec:<id>               | hash   | a batch's record (batches/record.ts)                         | batches.retention once it ended
 * | batch:of:<owner>             | zset   | batch id -> minus its creation ms (newest first)              | none (members pruned when their record is gone)
 * | batch:all                    | zset   | every batch id -> minus its creation ms (GET /-/batches)      | none (pruned like the above)
 * | batch:active                 | zset   | unfinished batch id -> when the sweep looks at it next (ms)   | none (removed when the batch ends)
 * | batch:notify                 | zset   | ended batch id with a callback_url -> when it ended (ms)      | none (removed once its webhook is handed over)
 * | batch:q:<model>              | list   | lines waiting to run: "<batch id>:<line>:<attempts>"          | none (entries of an ended batch are dropped when reached)
 * | batch:p:<model>              | zset   | lines running: "<entry>|<token>" -> lease deadline (ms)       | none (the sweep requeues lapsed leases)
 * | batch:r:<model>              | zset   | lines waiting for a retry: entry -> due (ms)                  | none (a claim moves due entries to the queue head)
 * | batch:done:<id>              | hash   | line -> "s" (succeeded) or "f" (failed): a line ends once     | with the record
 * | batch:out:<id>               | hash   | line -> its output line, until written to a segment           | with the record
 * | batch:seg:<id>               | list   | the segments written so far: "<o|e>:<object key>"             | with the record
 * | batch:flush:<id>             | string | a flush under way (its token)                                 | FLUSH_LEASE_MS
 * | batch:idem:<owner>:<key>     | string | the batch id an Idempotency-Key created                       | jobs.idempotency_ttl
 *
 * `<owner>` is the consumer, URI-encoded ("" for anonymous callers); `<model>` the model alias,
 * URI-encoded; `<line>` the 0-based line number in the input file.
 *
 * Object store
 * | key                              | holds
 * |----------------------------------|--------------------------------------------------------------
 * | batches/files/<file id>          | a file's bytes (an upload, or a batch's output or error file)
 * | batches/<batch id>/lines/<n>     | the n-th chunk of the batch's checked lines (JSONL)
 * | batches/<batch id>/seg/<token>   | finished lines written while the batch ran (JSONL)
 */

const enc = encodeURIComponent;

export const batchKeys = {
  file: (id: string) => `batch:file:${id}`,
  filesOf: (owner: string) => `batch:files:${enc(owner)}`,
  fileExpiry: "batch:file-expiry",
  record: (id: string) => `batch:rec:${id}`,
  /** The prefix a claim builds record keys from (a Redis Cluster tags it like the keys). */
  recordPrefix: "batch:rec:",
  batchesOf: (owner: string) => `batch:of:${enc(owner)}`,
  all: "batch:all",
  active: "batch:active",
  notify: "batch:notify",
  queue: (model: string) => `batch:q:${enc(model)}`,
  running: (model: string) => `batch:p:${enc(model)}`,
  retry: (model: string) => `batch:r:${enc(model)}`,
  done: (id: string) => `batch:done:${id}`,
  output: (id: string) => `batch:out:${id}`,
  segments: (id: string) => `batch:seg:${id}`,
  flushing: (id: string) => `batch:flush:${id}`,
  idempotency: (owner: string, key: string) => `batch:idem:${enc(owner)}:${key}`,

  fileObject: (id: string) => `batches/files/${id}`,
  chunkObject: (batchId: string, chunk: number) => `batches/${batchId}/lines/${chunk}`,
  segmentObject: (batchId: string, token: string) => `batches/${batchId}/seg/${token}`,
  /** Every object of one batch (its chunks and segments), deleted when it ends. */
  batchObjects: (batchId: string) => `batches/${batchId}/`,
};
