/**
 * Every key the limits plugin keeps in the KV store. Each segment is URI-encoded, so a
 * consumer, service type or model name holding ":" can never make two keys collide.
 *
 * | key                                   | type   | holds                                                     | TTL
 * |---------------------------------------|--------|-----------------------------------------------------------|------------------------------------------------
 * | rl:<type>:<consumer>                  | string | requests in the current rate window                       | `period` of the entry that opened the window
 * | tok:<type>:<consumer>                 | string | prompt + completion tokens in the global token window     | `token_period` of the entry that opened it
 * | tok:<type>:<consumer>:<model>         | string | tokens in the model-level window (`token_limits`)         | that model's `token_period`
 * | cost:<type>:<consumer>                | string | cost in nano-units of pricing.currency (integer)         | `cost_period` of the entry that opened it
 * | cost:<type>:<consumer>:<model>        | string | cost in the model-level window (`token_limits`)          | that model's `cost_period`
 * | ptime:<type>:<consumer>               | string | inference seconds in the processing window (float)       | `processing_period` of the entry that opened it
 * | conc:<type>:<consumer>                | zset   | slot -> deadline (ms): in-flight submissions (a random     | until its last member's deadline
 * |                                       |        | reservation id) and saved, unfinished jobs (the job id)   |
 * | sem:<type>:<model>:shared             | string | sync requests holding a shared slot                       | 30 min, refreshed on every acquire
 * | sem:<type>:<model>:reserved           | string | priority sync requests holding a reserved slot            | 30 min, refreshed on every acquire
 * | rl:key:<key id>                       | string | requests of one API key (its `limits.rate`), any type     | the key's `period`
 * | tok:key:<key id>                      | string | tokens of one API key (its `limits.token_rate`)           | the key's `token_period`
 * | cost:key:<key id>                     | string | cost of one API key in nano-units (its `limits.cost_rate`) | the key's `cost_period`
 * | rsv:<token or cost window key>        | zset   | `<amount>:<hold id>` -> deadline (ms): what requests in    | until its last member's deadline
 * |                                       |        | flight hold of that budget (hold.ts)                       |
 *
 * The counters are per consumer per service type, not per user type: the user type only
 * selects which `rate_limits` entry (or `"*"`) a request is measured against, so
 * `GET /usage` can show a consumer's live windows without knowing their user type.
 * A service type is never named "key" with a consumer that is a key id, so the `:key:` keys
 * cannot meet a type's (and a type named "key" would encode its consumer after it anyway).
 * Windows are fixed: the TTL is set when a window opens and never extended.
 *
 * An `rsv:` member's deadline (HOLD_MS after its request was admitted) frees a hold whose
 * request never ended (its replica crashed); admissions drop members past it.
 *
 * A `conc:` member's deadline is its safety net: a reservation whose submission never
 * finished (the replica crashed mid-upload) frees itself after 30 minutes, and a job whose
 * terminal event never came (its record expired unfinished) after twice its pending TTL.
 */

const segment = encodeURIComponent;

export const limitKeys = {
  rate: (type: string, consumer: string) => `rl:${segment(type)}:${segment(consumer)}`,
  tokens: (type: string, consumer: string) => `tok:${segment(type)}:${segment(consumer)}`,
  modelTokens: (type: string, consumer: string, model: string) => `tok:${segment(type)}:${segment(consumer)}:${segment(model)}`,
  cost: (type: string, consumer: string) => `cost:${segment(type)}:${segment(consumer)}`,
  modelCost: (type: string, consumer: string, model: string) => `cost:${segment(type)}:${segment(consumer)}:${segment(model)}`,
  processingTime: (type: string, consumer: string) => `ptime:${segment(type)}:${segment(consumer)}`,
  concurrentJobs: (type: string, consumer: string) => `conc:${segment(type)}:${segment(consumer)}`,
  syncShared: (type: string, model: string) => `sem:${segment(type)}:${segment(model)}:shared`,
  credentialRate: (id: string) => `rl:key:${segment(id)}`,
  credentialTokens: (id: string) => `tok:key:${segment(id)}`,
  keyCost: (id: string) => `cost:key:${segment(id)}`,
  syncReserved: (type: string, model: string) => `sem:${segment(type)}:${segment(model)}:reserved`,
  /** The holds on a token or cost budget, next to its window (the same hash slot). */
  held: (windowKey: string) => `rsv:${windowKey}`,
};
