/**
 * `node dist/bench/alloc-top.js FILE.heapprofile [N]`: the top N allocation sites (function and
 * file) of a sampling heap profile by bytes allocated, self and with callees, from
 * bench/alloc-sampler.ts.
 */
import { readFileSync } from "node:fs";

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

const [file, countArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: node dist/bench/alloc-top.js FILE.heapprofile [N]\n");
  process.exit(2);
}
const top = Number(countArg ?? 40);
const root = (JSON.parse(readFileSync(file, "utf8")) as { head: HeapNode }).head;
const self = new Map<string, number>();
const total = new Map<string, number>();
let all = 0;
const label = (n: HeapNode) =>
  `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, "$1/")}:${n.callFrame.lineNumber + 1}`;
function walk(node: HeapNode, stack: Set<string>): number {
  const name = label(node);
  let sum = node.selfSize;
  self.set(name, (self.get(name) ?? 0) + node.selfSize);
  all += node.selfSize;
  const inner = new Set(stack).add(name);
  for (const child of node.children) sum += walk(child, inner);
  if (!stack.has(name)) total.set(name, (total.get(name) ?? 0) + sum);
  return sum;
}
walk(root, new Set());
const print = (title: string, map: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((bytes / all) * 100).toFixed(1).padStart(6)}%  ${(bytes / 1e6).toFixed(1).padStart(8)} MB  ${name}\n`);
  }
};
process.stdout.write(`${file}: ${(all / 1e6).toFixed(1)} MB sampled\n`);
print("self", self);
print("with callees", total);
