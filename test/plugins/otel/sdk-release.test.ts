/**
 * Leaving the process's OpenTelemetry SDK (plugins/otel/sdk.ts) when the last runtime's span
 * processor cannot flush, as when the collector is unreachable at close: the SDK must still go,
 * or its globals outlive every runtime (a later runtime's spans went to the dead SDK's sampler).
 */
import { api, node } from "@opentelemetry/sdk-node";
import { expect, it } from "vitest";
import { acquire } from "../../../plugins/otel/sdk.ts";

const registered = () => (api.trace.getTracerProvider() as unknown as { getDelegate(): object }).getDelegate().constructor.name;

it("a runtime whose spans cannot be flushed at close still leaves the SDK, and says the flush failed", async () => {
  const unreachable: node.SpanProcessor = {
    onStart: () => {},
    onEnd: () => {},
    forceFlush: async () => {},
    shutdown: () => Promise.reject(new Error("collector unreachable")),
  };
  const sdk = await acquire("unit-test", { sampler: new node.AlwaysOnSampler(), processor: unreachable });
  expect(registered()).not.toBe("NoopTracerProvider");
  await expect(sdk.release()).rejects.toThrow("collector unreachable");
  expect(registered()).toBe("NoopTracerProvider");

  // The next runtime starts a fresh SDK, whose spans its own sampler decides.
  const next = await acquire("unit-test", { sampler: new node.AlwaysOnSampler(), processor: new node.SimpleSpanProcessor(new node.InMemorySpanExporter()) });
  const span = next.tracer.startSpan("after", {}, api.ROOT_CONTEXT);
  expect(span.spanContext().traceFlags & api.TraceFlags.SAMPLED).toBe(api.TraceFlags.SAMPLED);
  span.end();
  await next.release();
});
