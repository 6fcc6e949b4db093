/**
 * `--import=dist/bench/alloc-sampler.js` (writes `ALLOC_FILE`, default `$TMPDIR/alloc-PID.heapprofile`): V8's sampling heap profiler
 * over everything the process allocates, objects the GC already collected included (which
 * `--heap-prof` leaves out), written to ALLOC_FILE as a .heapprofile when the process exits on
 * SIGTERM. What a request allocates is what the young-generation GC pays for, so this names
 * the allocations per request (`node dist/bench/alloc-top.js FILE`). With `ALLOC_SURVIVORS=1`
 * the objects a minor GC collected are left out: what is left is what survived one, which is
 * what the minor GC copies and promotes (the objects of finished requests, when something
 * keeps them alive).
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { tmpdir } from "node:os";
import { join } from "node:path";

const file = process.env.ALLOC_FILE ?? join(tmpdir(), `alloc-${process.pid}.heapprofile`);
const session = new Session();
session.connect();
const survivorsOnly = process.env.ALLOC_SURVIVORS === "1";
session.post("HeapProfiler.startSampling", {
  samplingInterval: 1024,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: !survivorsOnly,
});
process.prependListener("SIGTERM", () => {
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (!error) writeFileSync(file, JSON.stringify(result.profile));
  });
});
