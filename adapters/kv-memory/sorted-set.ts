/**
 * A Redis-style sorted set: members ordered by (score, member). Kept as a sorted array
 * next to a member index so range reads (the hot path of `claimDue`) are a binary
 * search plus a slice, and inserts cost one memmove instead of a re-sort.
 */

interface Item {
  score: number;
  member: string;
}

/** Redis orders equal scores by member bytes; UTF-16 order matches it for all but astral/high-BMP mixes. */
function compare(a: Item, b: Item): number {
  if (a.score !== b.score) return a.score < b.score ? -1 : 1;
  return a.member < b.member ? -1 : a.member > b.member ? 1 : 0;
}

export class SortedSet {
  private readonly items: Item[] = [];
  /** Each member's item in `items`: a new score changes the item in place (no new object per ZADD). */
  private readonly byMember = new Map<string, Item>();

  get size(): number {
    return this.items.length;
  }

  score(member: string): number | null {
    return this.byMember.get(member)?.score ?? null;
  }

  /** 1 when the member is new, 0 when only its score changed (ZADD). */
  add(score: number, member: string): number {
    let item = this.byMember.get(member);
    const existed = item !== undefined;
    if (item) {
      this.items.splice(this.lowerBound(item), 1);
      item.score = score;
    } else {
      item = { score, member };
      this.byMember.set(member, item);
    }
    this.items.splice(this.lowerBound(item), 0, item);
    return existed ? 0 : 1;
  }

  remove(member: string): number {
    const item = this.byMember.get(member);
    if (item === undefined) return 0;
    this.items.splice(this.lowerBound(item), 1);
    this.byMember.delete(member);
    return 1;
  }

  /** Members with min <= score <= max, ascending, at most `limit` (negative = no limit, as in Redis LIMIT). */
  rangeByScore(min: number, max: number, limit?: number): string[] {
    const out: string[] = [];
    const cap = limit === undefined || limit < 0 ? Infinity : limit;
    // An empty member sorts before every other member of the same score.
    for (let i = this.lowerBound({ score: min, member: "" }); i < this.items.length && out.length < cap; i++) {
      const item = this.items[i];
      if (item.score > max) break;
      out.push(item.member);
    }
    return out;
  }

  private lowerBound(target: Item): number {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(this.items[mid], target) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
