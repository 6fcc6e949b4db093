/**
 * "Did you mean" for a misspelt config key: the allowed key closest to the one written, by
 * edit distance (insertions, deletions, substitutions and swaps of two neighbours all cost 1,
 * so `servics`, `timout` and `sevrices` all find their key). Only a close key is suggested: a
 * wrong guess would send the reader looking in the wrong place.
 */

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const rows: number[][] = Array.from({ length: s.length + 1 }, (_, i) => [i, ...new Array<number>(t.length).fill(0)]);
  for (let j = 0; j <= t.length; j++) rows[0][j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1);
    }
  }
  return rows[s.length][t.length];
}

/**
 * The allowed key nearest to `written`, or undefined when none is close: at most one edit per
 * three characters of the longer name (one for short keys like `db`), the first in `allowed`
 * order on a tie.
 */
export function closestKey(written: string, allowed: Iterable<string>): string | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const key of allowed) {
    if (key === written) continue;
    const distance = editDistance(written, key);
    const limit = Math.max(1, Math.floor(Math.max(written.length, key.length) / 3));
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { key, distance };
  }
  return best?.key;
}
