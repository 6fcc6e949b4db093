/**
 * A relay job's span: with tracing on (the otel plugin's `tracing` service), each job runs
 * in a "relay job" span continuing the trace of the request that submitted it, so the
 * job's backend calls show up in that trace. Jobs submitted with tracing off (or before
 * the gateway stored trace context) start a trace of their own.
 */
import type { PluginApi } from "../../core/plugins/types.ts";
import type { JobRecord } from "../../core/jobs/types.ts";
import { ATTR } from "../../core/telemetry/attributes.ts";
import type { WorkSpan } from "../../core/telemetry/tracing.ts";

export type JobSpan = WorkSpan;

export type InJobTrace = <T>(job: JobRecord, fn: (span: JobSpan) => Promise<T>) => Promise<T>;

const noSpan: JobSpan = { setAttributes: () => {}, fail: () => {} };

export const untracedJobs: InJobTrace = (_job, fn) => fn(noSpan);

export function jobTrace(api: PluginApi): InJobTrace {
  return (job, fn) => {
    // Looked up per job, not at setup: no start-order dependency on the otel plugin.
    if (!api.has("tracing")) return fn(noSpan);
    const attributes: Record<string, string> = { [ATTR.jobId]: job.id, [ATTR.serviceType]: job.service_type, [ATTR.model]: job.model };
    if (job.consumer_name) attributes[ATTR.consumer] = job.consumer_name;
    if (job.user_type) attributes[ATTR.userType] = job.user_type;
    if (job.operation) attributes[ATTR.operation] = job.operation;
    return api.use("tracing").continueTrace("relay job", job.traceparent, attributes, fn);
  };
}
