/**
 * Which Redis Cluster hash slot each key lives in: the owner whose keys one atomic
 * operation touches together (docs/scale-out.md, "What is atomic across what").
 *
 * On a Redis Cluster a script or a multi-key command must keep all its keys in one hash
 * slot. The key names the plugins use stay the same in every mode; the cluster adapter
 * stores each key under `{tag}name`, where the tag is chosen here by the owner of the key,
 * so the keys one operation touches always share a slot. One Redis and Sentinel store the
 * plain names, so data written before Cluster support is read as it was.
 *
 * | names                                                      | tag               | why together
 * |------------------------------------------------------------|-------------------|---------------------------------------------------------
 * | job:, job-expired:, job-cancel:, jobs:, relay:,            | jobs              | a job's status change moves its record, its model's queue,
 * | relay-lease:, relay-retry:, webhook:                       |                   | its consumer's index and the notification outbox together,
 * |                                                            |                   | and a job is found by id alone (so not per model)
 * | usage:                                                     | usage             | one record updates a batch of consumers and the buckets
 * | rl:, tok:, cost:, ptime:, conc:                            | c:<consumer>      | one request's rate, token and cost windows, per consumer
 * | (`<prefix>:<type>:<consumer>...`; an API key's own windows |                   | (an API key's windows: per key, read in their own call)
 * | `<prefix>:key:<id>` the same way, tagged by the key id)    |                   |
 * | rsv:<window key>                                           | the window's tag  | what requests in flight hold of a budget, judged with its window
 * | apikey:id:                                                 | apikeys           | the admin listing reads every key record at once
 * | sem:<type>:<model>:shared / :reserved                      | s:<type>:<model>  | the shared and reserved pools of one model
 * | batch:                                                     | batches           | a batch line's claim reads its batch's record next to its
 * |                                                            |                   | model's queue, and a batch's end moves files and indexes together
 * | anything else                                              | none (own slot)   | only read or written one key at a time
 *
 * Key segments of consumers, types and models are URI-encoded, so they hold no ":", "{" or "}".
 */

const JOBS = ["job:", "job-expired:", "job-cancel:", "jobs:", "relay:", "relay-lease:", "relay-retry:", "webhook:"];
const PER_CONSUMER = ["rl:", "tok:", "cost:", "ptime:", "conc:"];
/** A budget window's holds live with the window. */
const HELD = "rsv:";

/** The hash tag (without braces) a key is stored under on a cluster; undefined = the key's own slot. */
export function hashTagOf(key: string): string | undefined {
  if (key.startsWith(HELD)) return hashTagOf(key.slice(HELD.length));
  if (JOBS.some((prefix) => key.startsWith(prefix))) return "jobs";
  if (key.startsWith("usage:")) return "usage";
  if (key.startsWith("batch:")) return "batches";
  if (key.startsWith("apikey:id:")) return "apikeys";
  if (PER_CONSUMER.some((prefix) => key.startsWith(prefix))) {
    const consumer = key.split(":")[2];
    return consumer === undefined ? undefined : `c:${consumer}`;
  }
  if (key.startsWith("sem:")) {
    const [, type, model] = key.split(":");
    return model === undefined ? undefined : `s:${type}:${model}`;
  }
  return undefined;
}

/** The name a key is stored under on a cluster. */
export function clusterKey(key: string): string {
  const tag = hashTagOf(key);
  return tag === undefined ? key : `{${tag}}${key}`;
}

/** The key a stored cluster name stands for (the inverse of `clusterKey`). */
export function keyOfClusterName(name: string): string {
  if (!name.startsWith("{")) return name;
  const end = name.indexOf("}");
  if (end < 0) return name;
  const key = name.slice(end + 1);
  return hashTagOf(key) === name.slice(1, end) ? key : name;
}
