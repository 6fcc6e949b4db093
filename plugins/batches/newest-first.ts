/**
 * A page of an index kept newest first: a sorted set whose members are ids carrying their
 * creation time (ids.ts), scored by minus that time, so an ascending read is newest first
 * and equal times come in member order. `after` is the last id of the previous page: the page
 * starts right behind it, even when that item has since been deleted.
 */
import type { KvStore } from "../../core/stores/kv.ts";

export interface NewestFirstPage<T> {
  items: T[];
  hasMore: boolean;
}

export interface Cursor {
  after: string;
  afterTime: number;
}

/** What `load` makes of a member: its item, "skip" (filtered out), or "gone" (pruned from the index). */
export type Loaded<T> = T | "skip" | "gone";

/** Up to `limit` items behind the cursor, read in slices of the index; `hasMore` when another follows. */
export async function newestFirst<T>(
  kv: KvStore,
  key: string,
  cursor: Cursor | undefined,
  limit: number,
  timeOf: (member: string) => number | undefined,
  load: (member: string) => Promise<Loaded<T>>,
): Promise<NewestFirstPage<T>> {
  const items: T[] = [];
  let from = cursor ? -cursor.afterTime : -Infinity;
  // Members of score `from` already handled: the next slice starts with them again.
  let handled = new Set<string>();
  for (;;) {
    const want = limit + 1 - items.length;
    const members = await kv.zrangeByScore(key, from, Infinity, want + handled.size);
    let lastScore = from;
    let atLast = new Set(handled);
    let progressed = false;
    for (const member of members) {
      if (handled.has(member)) continue;
      progressed = true;
      const time = timeOf(member);
      if (time === undefined) {
        await kv.zrem(key, member);
        continue;
      }
      if (-time !== lastScore) {
        lastScore = -time;
        atLast = new Set();
      }
      atLast.add(member);
      if (cursor && time === cursor.afterTime && member <= cursor.after) continue;
      const item = await load(member);
      if (item === "gone") await kv.zrem(key, member);
      if (item === "gone" || item === "skip") continue;
      if (items.length === limit) return { items, hasMore: true };
      items.push(item);
    }
    if (!progressed || members.length < want + handled.size) return { items, hasMore: false };
    from = lastScore;
    handled = atLast;
  }
}
