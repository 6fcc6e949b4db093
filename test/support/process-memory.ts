/**
 * The peak RSS of another process (a gateway under test) while something runs, read from
 * /proc: a streamed upload must not grow it by the size of the body.
 */
import { existsSync, readFileSync } from "node:fs";

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) * 1024;
}

export interface RssWatch {
  /** RSS when the watch started. */
  before: number;
  /** The highest RSS sampled so far. */
  peak(): number;
  stop(): Promise<void>;
}

/** Samples the process's RSS every 10 ms until stopped; undefined where /proc does not exist. */
export function watchRss(pid: number | undefined): RssWatch | undefined {
  if (pid === undefined || !existsSync(`/proc/${pid}/status`)) return undefined;
  const before = rssBytes(pid);
  let peak = before;
  let watching = true;
  // Sampling while the work runs (not a wait): the peak is what matters, not the end.
  const sampler = (async () => {
    while (watching) {
      peak = Math.max(peak, rssBytes(pid));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return {
    before,
    peak: () => Math.max(peak, rssBytes(pid)),
    stop: async () => {
      watching = false;
      await sampler;
    },
  };
}
