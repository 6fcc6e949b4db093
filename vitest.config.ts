import { defineConfig } from "vitest/config";
import { SlowFirstSequencer } from "./test/support/sequencer.ts";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default on 2 cores is one worker (cores - 1), which runs the files one after
    // another while most of them wait on gateway processes and sockets. On the 2-core CI
    // machine, quiet: 1 worker 358 s, 2 workers 223 s, both green. Under heavy load from other
    // work, 2 workers once failed two-replicas' exact rate counts and answer-complete's rounds
    // (likely Redis replies later than redis.command_timeout, 500ms, failing the limit open):
    // run the suite on a machine that is not busy with something else.
    maxWorkers: 2,
    // A worker runs file after file in one process, reusing the modules it imported (the
    // gateway's core and plugins, the test support). A fresh process and fresh imports per file
    // cost about a third of a CPU second each: the unit files took 50 CPU seconds isolated and
    // 18 not, the whole suite 60 CPU seconds more. So a test file leaves the process as it found
    // it: it closes what it opens and restores what it changes (stubbed variables and globals
    // are restored after each test, below).
    isolate: false,
    unstubEnvs: true,
    unstubGlobals: true,
    // The longest files start first, also on a fresh clone (test/support/sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
  },
});
