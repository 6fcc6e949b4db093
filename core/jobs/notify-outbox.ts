/**
 * How long a job that ended with a callback_url waits in the notification outbox
 * (keys.ts `jobs:notify-outbox`) before the webhooks sweep treats its delivery as lost: long
 * enough for the process that ended it to persist the delivery itself (a result read from
 * the object store included), short enough that a crash delays the webhook only briefly.
 */
export const NOTIFY_GRACE_MS = 30_000;
