/**
 * The gateway's Prometheus series (every series GET /metrics shows, docs/design.md#metrics) as an
 * OTLP JSON metrics export: counters become cumulative monotonic sums, gauges gauges, and
 * histograms OTLP histograms (Prometheus' cumulative `le` buckets turned into per-bucket
 * counts). One registry serves both, so the two views never disagree.
 */

/** What prom-client's `registry.getMetricsAsJSON()` gives. */
export interface PromMetric {
  name: string;
  help: string;
  type: string;
  values: Array<{ value: number; labels: Partial<Record<string, string | number>>; metricName?: string }>;
}

type KeyValue = { key: string; value: { stringValue: string } };

type Labels = Partial<Record<string, string | number>>;

/**
 * Prometheus names cannot hold dots: the GenAI semantic conventions' metrics and attributes are
 * registered with underscores (`gen_ai_client_token_usage`, `gen_ai_token_type`) and get their
 * dotted names back here (`gen_ai.client.token.usage`, `gen_ai.token.type`).
 */
const otelName = (name: string): string => (name.startsWith("gen_ai_") ? `gen_ai.${name.slice(7).replaceAll("_", ".")}` : name);

const attributes = (labels: Labels): KeyValue[] =>
  Object.entries(labels).flatMap(([key, value]) => (value === undefined ? [] : [{ key: otelName(key), value: { stringValue: String(value) } }]));

const labelKey = (labels: Labels): string => JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));

interface Times {
  startTimeUnixNano: string;
  timeUnixNano: string;
}

function histogram(metric: PromMetric, times: Times): Record<string, unknown> {
  const series = new Map<string, { labels: Labels; buckets: Array<[number, number]>; sum: number; count: number }>();
  for (const sample of metric.values) {
    const { le, ...labels } = sample.labels;
    const key = labelKey(labels);
    const entry = series.get(key) ?? { labels, buckets: [], sum: 0, count: 0 };
    series.set(key, entry);
    if (sample.metricName?.endsWith("_bucket")) {
      if (le !== "+Inf") entry.buckets.push([Number(le), sample.value]);
    } else if (sample.metricName?.endsWith("_sum")) entry.sum = sample.value;
    else if (sample.metricName?.endsWith("_count")) entry.count = sample.value;
  }
  const dataPoints = [...series.values()].map((entry) => {
    const sorted = entry.buckets.sort(([a], [b]) => a - b);
    let previous = 0;
    const bucketCounts = sorted.map(([, cumulative]) => {
      const count = cumulative - previous;
      previous = cumulative;
      return String(count);
    });
    bucketCounts.push(String(entry.count - previous));
    return {
      attributes: attributes(entry.labels),
      ...times,
      count: String(entry.count),
      sum: entry.sum,
      bucketCounts,
      explicitBounds: sorted.map(([bound]) => bound),
    };
  });
  return { histogram: { aggregationTemporality: 2, dataPoints } };
}

function points(metric: PromMetric, times: Times) {
  return metric.values.map((sample) => ({ attributes: attributes(sample.labels), ...times, asDouble: sample.value }));
}

/** The export body; summaries (which the gateway does not use) are left out. */
export function otlpMetrics(metrics: readonly PromMetric[], resource: Record<string, string>, startedAtMs: number, nowMs: number): Record<string, unknown> {
  const times: Times = { startTimeUnixNano: `${startedAtMs}000000`, timeUnixNano: `${nowMs}000000` };
  const converted = metrics.flatMap((metric) => {
    const base = { name: otelName(metric.name), description: metric.help };
    if (metric.type === "counter") return [{ ...base, sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: points(metric, times) } }];
    if (metric.type === "gauge") return [{ ...base, gauge: { dataPoints: points(metric, times) } }];
    if (metric.type === "histogram") return [{ ...base, ...histogram(metric, times) }];
    return [];
  });
  return {
    resourceMetrics: [
      {
        resource: { attributes: Object.entries(resource).map(([key, value]) => ({ key, value: { stringValue: value } })) },
        scopeMetrics: [{ scope: { name: "inference-gateway" }, metrics: converted }],
      },
    ],
  };
}
