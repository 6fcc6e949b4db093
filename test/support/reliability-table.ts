/**
 * Prints docs/reliability.md's results table from the lines the reliability scenarios
 * appended (test/support/reliability-report.ts); the newest line of each scenario wins.
 *
 *   npx tsx test/support/reliability-table.ts [--runtime node|deno] [report.jsonl]
 *
 * The file defaults to $RELIABILITY_REPORT, else `<tmpdir>/gateway-reliability.jsonl`.
 */
import { existsSync, readFileSync } from "node:fs";
import { type ReliabilityLine, reliabilityReportPath, TOPOLOGY_NAMES } from "./reliability-report.ts";

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

const runtime = argument("--runtime") ?? "node";
const positional = process.argv.slice(2).filter((arg, i, all) => !arg.startsWith("--") && all[i - 1] !== "--runtime");
const file = positional[0] ?? reliabilityReportPath();
if (!existsSync(file)) {
  console.error(`no report at ${file}: run the reliability suite first (npx vitest run test/reliability)`);
  process.exit(1);
}

// One row per scenario, and per Redis topology for those that run on each.
const newest = new Map<string, ReliabilityLine>();
for (const text of readFileSync(file, "utf8").split("\n")) {
  if (text.trim() === "") continue;
  const line = JSON.parse(text) as ReliabilityLine;
  if (line.runtime !== runtime) continue;
  const key = `${line.id}/${line.redis ?? ""}`;
  const seen = newest.get(key);
  if (!seen || seen.at <= line.at) newest.set(key, line);
}
if (newest.size === 0) {
  console.error(`no ${runtime} lines in ${file}`);
  process.exit(1);
}

const cell = (text: string | number) => String(text).replaceAll("|", "\\|");
const errors = (line: ReliabilityLine) =>
  line.expectedErrors && line.expectedErrors.count > 0
    ? `${line.errors} (+${line.expectedErrors.count} as specified: ${line.expectedErrors.why})`
    : String(line.errors);

console.log("| # | Scenario | Load | Faults injected | Requests | Lost | Duplicated | Errors |");
console.log("|---|---|---|---|---:|---:|---:|---|");
const TOPOLOGY_ORDER = ["", "redis", "sentinel", "cluster"];
const order = (line: ReliabilityLine) => line.id * 10 + TOPOLOGY_ORDER.indexOf(line.redis ?? "");
for (const line of [...newest.values()].sort((a, b) => order(a) - order(b))) {
  const scenario = line.redis ? `${line.scenario} (on ${TOPOLOGY_NAMES[line.redis]})` : line.scenario;
  console.log(
    `| ${line.id} | ${[scenario, line.load, line.faults].map(cell).join(" | ")} | ${line.requests} | ${line.lost} | ${line.duplicated} | ${
      cell(errors(line))
    } |`,
  );
}
const stamps = [...newest.values()].map((line) => line.at).sort();
console.log(
  `\n${runtime}, run ${stamps[0].slice(0, 10)}${
    stamps.length > 1 && stamps.at(-1)!.slice(0, 10) !== stamps[0].slice(0, 10) ? ` to ${stamps.at(-1)!.slice(0, 10)}` : ""
  }`,
);
