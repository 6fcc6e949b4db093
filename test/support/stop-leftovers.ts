/**
 * Setup file of every test file (vitest.config.ts `setupFiles`): when the file ends, the gateway
 * and relay processes it started and left running are killed. A test that timed out while a start
 * was still waiting for /health leaves one behind (its `afterEach` never had it to stop), and a
 * worker runs many files (`isolate: false`), so such a process, with its GC and lease timers,
 * would run on through the rest of the suite: on a loaded CI machine a timeout then made more of
 * them. Hooks of a setup file run after the file's own `afterAll` (vitest's default stack order),
 * so this only ever finds what the file forgot.
 *
 * A runtime with tracing on that a file leaves open keeps the process's OpenTelemetry SDK
 * (plugins/otel/sdk.ts) registered for the next files of the worker, whose tracing then is not
 * their own: the file that left it fails here, by name, instead of a later one by chance.
 */
import { trace } from "@opentelemetry/api";
import { afterAll, expect } from "vitest";
import { liveProcesses } from "./gateway-process.ts";

const tracingLeftOn = () => (trace.getTracerProvider() as unknown as { getDelegate(): object }).getDelegate().constructor.name !== "NoopTracerProvider";

afterAll(() => {
  expect(tracingLeftOn(), "a runtime with tracing on was left open (close every runtime the file starts)").toBe(false);
});

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
