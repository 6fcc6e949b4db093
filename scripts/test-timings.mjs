/**
 * The per-file timing table of a test run, slowest first, from Vitest's JSON report:
 *   npx vitest run --reporter=default --reporter=json --outputFile.json=report.json
 *   node scripts/test-timings.mjs report.json [rows]
 * Prints a Markdown table (seconds, tests, file) and the sum of the files' times, which is
 * what the workers share: with 2 workers the run takes at least half of it, and at least
 * its longest file. Plain JavaScript, so it runs without a build.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";

const [file, rows = "25"] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: node scripts/test-timings.mjs report.json [rows]\n");
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, "utf8"));
const files = report.testResults
  .map((result) => ({
    seconds: (result.endTime - result.startTime) / 1000,
    tests: result.assertionResults.length,
    name: relative(process.cwd(), result.name),
    failed: result.status !== "passed",
  }))
  .sort((a, b) => b.seconds - a.seconds);
const sum = files.reduce((total, f) => total + f.seconds, 0);
console.log(`${files.length} files, ${report.numTotalTests} tests (${report.numFailedTests} failed), file times sum to ${sum.toFixed(0)} s\n`);
console.log("| seconds | tests | file |\n|---|---|---|");
for (const f of files.slice(0, Number(rows))) console.log(`| ${f.seconds.toFixed(1)} | ${f.tests} | ${f.name}${f.failed ? " (failed)" : ""} |`);
