/**
 * Why a key is refused, in words the client can act on, each counted under its reason in
 * `svc_auth_failures_total{reason}`. A message speaks only of the key that was sent: never
 * of its consumer, nor of whether another key or consumer exists.
 */
import { errors, type GatewayError } from "../../../core/errors.ts";
import type { HashEntry, KeyRecord } from "./record.ts";

export const FAILURE_REASONS = ["missing", "unknown", "expired", "disabled", "revoked", "malformed"] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export class KeyRefusal {
  constructor(
    readonly reason: FailureReason,
    readonly message: string,
  ) {}

  error(): GatewayError {
    const error = this.reason === "missing" ? undefined : "invalid_token";
    return errors.unauthorized(this.message, error ? `Bearer realm="api", error="${error}"` : 'Bearer realm="api"');
  }
}

const SEND = "send Authorization: Bearer <key> or x-api-key: <key>";

export const refusals = {
  missing: new KeyRefusal("missing", `missing API key: ${SEND}`),
  malformed: (what: string) => new KeyRefusal("malformed", `malformed API key: ${what}; gateway keys look like gw- followed by 43 letters, digits, - or _`),
  unknown: new KeyRefusal("unknown", "unknown API key: this gateway issued no such key (check for a typo, or ask for a new key)"),
};

/** The record the key stands for, or why it may not be used at `now`. */
export function judgeEntry(entry: HashEntry | undefined, now: number): KeyRecord | KeyRefusal {
  if (!entry) return refusals.unknown;
  const record = entry.record;
  if (record.status === "revoked") return new KeyRefusal("revoked", "revoked API key: this key was revoked and cannot be used again; ask for a new key");
  if (entry.valid_until !== undefined && Date.parse(entry.valid_until) <= now) {
    return new KeyRefusal(
      "expired",
      `expired API key: this secret was replaced by a rotation and its grace period ended at ${entry.valid_until}; use the new secret`,
    );
  }
  if (record.expires_at !== undefined && Date.parse(record.expires_at) <= now) {
    return new KeyRefusal("expired", `expired API key: this key expired at ${record.expires_at}; ask for its expiry to be extended or for a new key`);
  }
  if (!record.enabled) return new KeyRefusal("disabled", "disabled API key: this key is disabled; ask the gateway's administrator to enable it");
  return record;
}
