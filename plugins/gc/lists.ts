/** Bounded reads of a queue list: never one LRANGE over the whole list. */
import type { KvStore } from "../../core/stores/kv.ts";
import { BATCH, checkStopped } from "./context.ts";

/**
 * Walks a list from the head, BATCH entries per LRANGE. `visit` answers how many entries
 * of its chunk it removed, so the next read starts where the unvisited entries now are.
 *
 * Relays and other replicas change the list meanwhile: an entry removed ahead of the
 * walk shifts the rest towards the head, so a few entries may be skipped this tick (the
 * next tick sees them). The walk reads at most the length the list had when it started,
 * so entries pushed meanwhile cannot keep it going forever.
 */
export async function walkList(
  kv: KvStore,
  key: string,
  signal: AbortSignal,
  visit: (ids: string[]) => Promise<number>,
  /** Checked before each read: true ends the walk early (a collection reached its cap). */
  enough: () => boolean = () => false,
): Promise<void> {
  const total = await kv.llen(key);
  let offset = 0;
  let seen = 0;
  while (seen < total && !enough()) {
    checkStopped(signal);
    const ids = await kv.lrange(key, offset, offset + Math.min(BATCH, total - seen) - 1);
    if (ids.length === 0) return;
    seen += ids.length;
    const removed = await visit(ids);
    offset += ids.length - removed;
  }
}
