/**
 * `node dist/bench/profile.js FILE.cpuprofile [N] [--under NAME]`: the top N functions of a
 * V8 CPU profile (from `npm run bench -- --cpu-prof`) by self time and by total time, and
 * self time per source file, so a hot spot can be named with its share of the gateway's CPU.
 * `--under NAME` counts only samples with a frame whose label contains NAME (what that
 * function spends its time on).
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const underAt = args.indexOf("--under");
const under = underAt >= 0 ? args.splice(underAt, 2)[1] : undefined;
const [file, countArg] = args;
if (!file) {
  process.stderr.write("usage: node dist/bench/profile.js FILE.cpuprofile [N] [--under NAME]\n");
  process.exit(2);
}
const top = Number(countArg ?? 30);
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

/** `node_modules/<package>/...` for dependencies, `dist/...` for the gateway's own code. */
const short = (url: string) => {
  const dependency = /\/(node_modules\/.*)$/.exec(url);
  if (dependency) return dependency[1];
  return url.replace(/^.*\/(dist\/)/, "$1");
};
const label = (node: ProfileNode) => `${node.callFrame.functionName || "(anonymous)"} ${short(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;

function within(id: number, name: string): boolean {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const frame = byId.get(at);
    if (frame && label(frame).includes(name)) return true;
  }
  return false;
}

const selfTime = new Map<number, number>();
profile.samples.forEach((id, i) => {
  if (under !== undefined && !within(id, under)) return;
  selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...selfTime.values()].reduce((a, b) => a + b, 0);

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const files = new Map<string, number>();
for (const [id, time] of selfTime) {
  const node = byId.get(id);
  if (!node) continue;
  self.set(label(node), (self.get(label(node)) ?? 0) + time);
  const source = short(node.callFrame.url) || node.callFrame.functionName;
  files.set(source, (files.get(source) ?? 0) + time);
  // Each frame on the stack once, however deep the recursion.
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const frame = byId.get(at);
    if (!frame) break;
    const key = label(frame);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + time);
  }
}

const print = (title: string, map: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, time] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((time / total) * 100).toFixed(1).padStart(6)}%  ${(time / 1000).toFixed(0).padStart(7)} ms  ${name}\n`);
  }
};
process.stdout.write(`${file}: ${(total / 1000).toFixed(0)} ms sampled${under ? ` under "${under}"` : ""}\n`);
print("self time", self);
print("total time", inclusive);
print("self time by file", files);
