/** Reading series out of Prometheus text exposition, for tests that check /metrics. */

function unescapeLabel(value: string): string {
  return value.replace(/\\(["\\n])/g, (_, char: string) => (char === "n" ? "\n" : char));
}

/** The labels of a sample line's `{...}` part. */
function labelsOf(inside: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const match of inside.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[match[1]] = unescapeLabel(match[2]);
  return labels;
}

/** The value of the series with exactly these labels (`{}`: a series without labels), or 0 when it is absent (a counter not yet incremented). */
export function metricValue(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels);
  for (const line of text.split("\n")) {
    if (wanted.length === 0 && line.startsWith(`${name} `)) return Number(line.slice(name.length + 1).trim());
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf("}");
    const found = labelsOf(line.slice(name.length + 1, close));
    if (Object.keys(found).length === wanted.length && wanted.every(([k, v]) => found[k] === v)) return Number(line.slice(close + 1).trim());
  }
  return 0;
}

/** The sum of a series' samples whose labels include `labels` (others may differ); 0 when none. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const sample = labelsOf(match[2] ?? "");
    if (Object.entries(labels).every(([k, v]) => sample[k] === v)) total += Number(match[3]);
  }
  return total;
}
