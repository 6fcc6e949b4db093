/**
 * What the primary does when a worker exits on its own: start it again after a delay that
 * doubles while it keeps exiting soon after its start, or give up when it has done so too
 * often in a row (a crash loop: a supervisor should see the failure, not a gateway that never
 * settles). A worker that ran a while starts the count again.
 */

/** The first restart of a worker waits this long, each further one twice the last. */
export const FIRST_RESTART_DELAY_MS = 500;
/** A worker that exits within this time of its start died "soon": a sign of a loop. */
export const SOON_AFTER_START_MS = 30_000;
/** This many deaths in a row of one worker, each soon after its start, and the primary gives up. */
export const CRASH_LOOP_DEATHS = 5;

export type AfterExit = { restartInMs: number; soonDeaths: number } | { giveUp: true; soonDeaths: number };

/** `soonDeaths`: the worker's deaths in a row so far, each soon after its start; `livedMs`: how long this one ran. */
export function afterExit(soonDeaths: number, livedMs: number): AfterExit {
  const deaths = livedMs < SOON_AFTER_START_MS ? soonDeaths + 1 : 1;
  if (deaths >= CRASH_LOOP_DEATHS) return { giveUp: true, soonDeaths: deaths };
  return { restartInMs: FIRST_RESTART_DELAY_MS * 2 ** (deaths - 1), soonDeaths: deaths };
}
