/**
 * Setup file of every test file (vitest.config.ts `setupFiles`): when the file ends, the gateway
 * and relay processes it started and left running are killed. A test that timed out while a start
 * was still waiting for /health leaves one behind (its `afterEach` never had it to stop), and a
 * worker runs many files (`isolate: false`), so such a process, with its GC and lease timers,
 * would run on through the rest of the suite: on a loaded CI machine a timeout then made more of
 * them. Hooks of a setup file run after the file's own `afterAll` (vitest's default stack order),
 * so this only ever finds what the file forgot.
 */
import { afterAll } from "vitest";
import { liveProcesses } from "./gateway-process.ts";

afterAll(async () => {
  const left = [...liveProcesses];
  liveProcesses.clear();
  await Promise.all(
    left.map((child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      })
    ),
  );
});
