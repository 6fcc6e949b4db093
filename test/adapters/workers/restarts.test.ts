/** When a worker that exited on its own is started again, and when the primary gives up. */
import { expect, it } from "vitest";
import { afterExit, CRASH_LOOP_DEATHS, SOON_AFTER_START_MS } from "../../../adapters/workers/restarts.ts";

it("waits 0.5 s, then twice as long for each death soon after the start, and gives up at the fifth in a row", () => {
  let deaths = 0;
  const delays: number[] = [];
  for (;;) {
    const next = afterExit(deaths, 1_000);
    deaths = next.soonDeaths;
    if ("giveUp" in next) break;
    delays.push(next.restartInMs);
  }
  expect(delays).toEqual([500, 1_000, 2_000, 4_000]);
  expect(deaths).toBe(CRASH_LOOP_DEATHS);
});

it("starts the count again after a worker that ran a while", () => {
  expect(afterExit(4, SOON_AFTER_START_MS)).toEqual({ restartInMs: 500, soonDeaths: 1 });
  expect(afterExit(3, SOON_AFTER_START_MS - 1)).toEqual({ restartInMs: 4_000, soonDeaths: 4 });
});
