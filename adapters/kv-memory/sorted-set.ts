/**
 * A Redis-style sorted set: members ordered by (score, member), kept as a list of sorted
 * blocks of at most 2 x BLOCK items next to a member index. A range read (the hot path of
 * `claimDue`) is two binary searches and a walk; an insert or a new score moves at most one
 * block's items. One sorted array moved half the set's items per change: with the usage
 * plugin's consumer index and rank (one member per consumer, a new score on every request),
 * an update cost grew with the consumers (bench/README.md, the growth scenarios).
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

/** Items per block after a split; a block splits above twice this. */
const BLOCK = 128;

/** The first index of `items` whose item is not below `target`. */
function lowerBound(items: readonly Item[], target: Item): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(items[mid], target) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SortedSet {
  /** Non-empty sorted blocks, in order: every item of a block sorts before every item of the next. */
  private readonly blocks: Item[][] = [];
  private count = 0;
  /** Each member's item: a new score changes the item in place (no new object per ZADD). */
  private readonly byMember = new Map<string, Item>();

  get size(): number {
    return this.count;
  }

  score(member: string): number | null {
    return this.byMember.get(member)?.score ?? null;
  }

  /** 1 when the member is new, 0 when only its score changed (ZADD). */
  add(score: number, member: string): number {
    let item = this.byMember.get(member);
    const existed = item !== undefined;
    if (item) {
      if (item.score === score) return 0;
      this.unlink(item);
      item.score = score;
    } else {
      item = { score, member };
      this.byMember.set(member, item);
    }
    this.link(item);
    return existed ? 0 : 1;
  }

  remove(member: string): number {
    const item = this.byMember.get(member);
    if (item === undefined) return 0;
    this.unlink(item);
    this.byMember.delete(member);
    return 1;
  }

  /** Members with min <= score <= max, ascending, at most `limit` (negative = no limit, as in Redis LIMIT). */
  rangeByScore(min: number, max: number, limit?: number): string[] {
    const out: string[] = [];
    const cap = limit === undefined || limit < 0 ? Infinity : limit;
    // An empty member sorts before every other member of the same score.
    const from = { score: min, member: "" };
    const first = this.blockOf(from);
    for (let b = first; b < this.blocks.length; b++) {
      const items = this.blocks[b];
      for (let i = b === first ? lowerBound(items, from) : 0; i < items.length; i++) {
        const item = items[i];
        if (item.score > max || out.length >= cap) return out;
        out.push(item.member);
      }
    }
    return out;
  }

  /** The first block whose last item is not below `target` (blocks.length when none is). */
  private blockOf(target: Item): number {
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const items = this.blocks[mid];
      if (compare(items[items.length - 1], target) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private link(item: Item): void {
    this.count++;
    if (this.blocks.length === 0) {
      this.blocks.push([item]);
      return;
    }
    // Past every block's last item: the last block takes it.
    const b = Math.min(this.blockOf(item), this.blocks.length - 1);
    const items = this.blocks[b];
    items.splice(lowerBound(items, item), 0, item);
    if (items.length > 2 * BLOCK) this.blocks.splice(b + 1, 0, items.splice(BLOCK));
  }

  private unlink(item: Item): void {
    const b = this.blockOf(item);
    const items = this.blocks[b];
    items.splice(lowerBound(items, item), 1);
    this.count--;
    if (items.length === 0) this.blocks.splice(b, 1);
  }
}
