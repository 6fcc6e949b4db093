/** What the gateway stores about one API key, and the part of it the admin API shows. */

export interface KeyLimits {
  rate: number;
  period: string;
  token_rate: number;
  token_period: string;
  /** A dollar budget in pricing.currency per `cost_period`; 0 = none. Absent in keys stored before it existed. */
  cost_rate: number;
  cost_period: string;
}

/** The fields a client sets (POST and PATCH). */
export interface KeyFields {
  consumer: string;
  user_type?: string;
  groups: string[];
  roles: string[];
  scopes: string[];
  /** Model alias globs; empty = every model the caller may otherwise see. */
  models: string[];
  /** RFC 3339. */
  expires_at?: string;
  enabled: boolean;
  metadata: Record<string, string>;
  limits?: KeyLimits;
}

export interface KeyRecord extends KeyFields {
  id: string;
  prefix: string;
  status: "active" | "revoked";
  created_at: string;
  updated_at: string;
  revoked_at?: string;
  /** HMAC of the current secret. */
  hash: string;
  /** After a rotation: the previous secret's HMAC, valid until `previous_valid_until`. */
  previous_hash?: string;
  previous_valid_until?: string;
}

/** What a key's hash entry holds: the record, and for a rotated-out secret when it stops. */
export interface HashEntry {
  record: KeyRecord;
  valid_until?: string;
}

/** A key's status in the admin API: what the record stores, and "disabled" for a key switched off (`enabled: false`) but not revoked. */
export type KeyStatus = KeyRecord["status"] | "disabled";

export type PublicKey = Omit<KeyRecord, "hash" | "previous_hash" | "status"> & { status: KeyStatus };

export function publicView(record: KeyRecord): PublicKey {
  const { hash: _hash, previous_hash: _previous, ...rest } = record;
  return { ...rest, status: record.status === "active" && !record.enabled ? "disabled" : record.status };
}
