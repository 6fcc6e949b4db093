/**
 * The OpenTelemetry SDK, once per process. `NodeSDK.start()` registers process-wide
 * globals (tracer provider, context manager, propagator) that cannot be registered twice,
 * while hot reload builds a new runtime next to the old one. So the SDK is started by the
 * first runtime that enables tracing and shut down when the last one closes; each runtime
 * contributes its own sampler and span processor (exporter endpoint and headers), and the
 * SDK delegates to the newest live runtime's. Spans keep the processor they started with.
 * Only the resource (`service_name`) is fixed for the life of the SDK.
 */
import { api, core, node, NodeSDK } from "@opentelemetry/sdk-node";

export type Tracer = api.Tracer;

/** What one runtime contributes: how to sample and where finished spans go. */
export interface RuntimeTelemetry {
  sampler: node.Sampler;
  processor: node.SpanProcessor;
}

/** Routes sampling and span processing to the newest live runtime's telemetry. */
class Delegate implements node.Sampler, node.SpanProcessor {
  readonly live: RuntimeTelemetry[] = [];
  private readonly startedWith = new WeakMap<object, node.SpanProcessor>();

  private get current(): RuntimeTelemetry | undefined {
    return this.live[this.live.length - 1];
  }

  shouldSample(...args: Parameters<node.Sampler["shouldSample"]>): ReturnType<node.Sampler["shouldSample"]> {
    return this.current?.sampler.shouldSample(...args) ?? { decision: node.SamplingDecision.NOT_RECORD };
  }

  toString(): string {
    return `GatewayRuntimeSampler{${this.current?.sampler.toString() ?? "none"}}`;
  }

  onStart(span: node.Span, parent: api.Context): void {
    const processor = this.current?.processor;
    if (!processor) return;
    this.startedWith.set(span, processor);
    processor.onStart(span, parent);
  }

  onEnd(span: node.ReadableSpan): void {
    (this.startedWith.get(span) ?? this.current?.processor)?.onEnd(span);
  }

  async forceFlush(): Promise<void> {
    await Promise.all(this.live.map((t) => t.processor.forceFlush()));
  }

  async shutdown(): Promise<void> {
    // Each runtime shuts its own processor down when it closes.
  }
}

interface Shared {
  sdk: NodeSDK;
  delegate: Delegate;
  serviceName: string;
  tracer: Tracer;
  propagator: api.TextMapPropagator;
}

let shared: Shared | undefined;
/** The last SDK's shutdown: a new SDK registers its globals only once the old ones are gone. */
let stopping: Promise<void> = Promise.resolve();

export interface Acquired {
  tracer: Tracer;
  propagator: api.TextMapPropagator;
  /** The service name the running SDK reports (the first runtime's; changing it needs a restart). */
  serviceName: string;
  release(): Promise<void>;
}

function start(serviceName: string): Shared {
  const delegate = new Delegate();
  const propagator = new core.W3CTraceContextPropagator();
  const sdk = new NodeSDK({
    serviceName,
    sampler: delegate,
    spanProcessors: [delegate],
    textMapPropagator: propagator,
    // Empty lists, not absent: absent makes NodeSDK configure exporters from OTEL_* variables.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  return { sdk, delegate, serviceName, tracer: api.trace.getTracer("inference-gateway"), propagator };
}

/** Joins (or starts) the process's SDK with this runtime's telemetry; `release` leaves it. */
export async function acquire(serviceName: string, telemetry: RuntimeTelemetry): Promise<Acquired> {
  if (!shared) await stopping;
  shared ??= start(serviceName);
  const current = shared;
  current.delegate.live.push(telemetry);
  let released = false;
  return {
    tracer: current.tracer,
    propagator: current.propagator,
    serviceName: current.serviceName,
    async release() {
      if (released) return;
      released = true;
      const index = current.delegate.live.indexOf(telemetry);
      if (index >= 0) current.delegate.live.splice(index, 1);
      // Flushes what this runtime's spans left in its batch. A flush that fails (the collector is
      // unreachable) still lets the SDK go below: left registered, its globals would outlive every
      // runtime, and a later one could not start a fresh SDK. The failure is passed on after.
      let flushFailure: unknown;
      await telemetry.processor.shutdown().catch((error: unknown) => (flushFailure = error ?? new Error("the span processor's shutdown failed")));
      await leave(current);
      if (flushFailure !== undefined) throw flushFailure;
    },
  };
}

/** Shuts the SDK down once no runtime uses it. */
async function leave(current: Shared): Promise<void> {
  if (current.delegate.live.length > 0 || shared !== current) return;
  shared = undefined;
  stopping = (async () => {
    await current.sdk.shutdown().catch(() => {});
    // Unregistered so that a later runtime (tracing re-enabled by a reload) can start a fresh SDK.
    api.trace.disable();
    api.context.disable();
    api.propagation.disable();
  })();
  await stopping;
}
