/**
 * Stored responses in the key-value store, one key per response (`responses:<id>`) with the
 * `responses.store_ttl` expiry: the Response as the client got it, the input items of its
 * request, the conversation before them (so `previous_response_id` is rebuilt with one read,
 * whatever the length of the chain), and the consumer it belongs to. Another consumer's
 * response is a missing one (docs/design.md#consumers-and-ownership).
 */
import { isRecord, type JsonObject, parseJson } from "../../core/llm/json.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { Sealer } from "./sealed.ts";

export interface StoredResponse {
  /** The consumer who created it; "" for a caller without one. */
  owner: string;
  response: JsonObject;
  /** The input items of the request that made it. */
  input: JsonObject[];
  /** The conversation before `input` (the chain of `previous_response_id`), for translated backends. */
  context: JsonObject[];
}

const keyOf = (id: string) => `responses:${id}`;

export class ResponseStore {
  constructor(
    private readonly kv: KvStore,
    private readonly sealer: Sealer,
    private readonly ttlMs: number,
  ) {}

  async put(record: StoredResponse): Promise<void> {
    await this.kv.set(keyOf(String(record.response.id)), await this.sealer.seal(JSON.stringify(record)), this.ttlMs);
  }

  /** The response `id` if `consumer` may see it (a caller without a consumer sees every one), else undefined. */
  async get(id: string, consumer: string | undefined): Promise<StoredResponse | undefined> {
    const stored = await this.kv.get(keyOf(id));
    if (stored === null) return undefined;
    const record = parseJson(await this.sealer.open(stored));
    if (!isRecord(record) || !isRecord(record.response) || typeof record.owner !== "string") return undefined;
    if (consumer !== undefined && record.owner !== consumer) return undefined;
    return record as unknown as StoredResponse;
  }

  async delete(id: string): Promise<void> {
    await this.kv.del(keyOf(id));
  }
}

/** The conversation a response continues: what came before it, its input, then its output. */
export function conversationAfter(record: StoredResponse): JsonObject[] {
  const output = Array.isArray(record.response.output) ? record.response.output.filter(isRecord) : [];
  return [...record.context, ...record.input, ...output];
}
