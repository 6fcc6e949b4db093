/**
 * `tsc -b` (the project given, else tsconfig.build.json) that says so on stderr when it has
 * something to compile: the first `npm start` of a fresh clone compiles for half a minute,
 * which would otherwise look like a hang. An up-to-date build prints nothing. Plain JavaScript:
 * it runs before anything is compiled. The diagnostics and the exit status are tsc's own.
 * After a build of the gateway's own project it bundles the command line (scripts/bundle.mjs),
 * as `npm run build` does; an up-to-date build writes nothing.
 */
import { existsSync } from "node:fs";
import ts from "typescript";

const project = process.argv[2] ?? "tsconfig.build.json";
/** tsc's "Building project '{0}'..." status, reported (with `verbose`) only for a project it compiles. */
const BUILDING_PROJECT = 6358;

let told = false;
function status(diagnostic) {
  if (told || diagnostic.code !== BUILDING_PROJECT) return;
  told = true;
  process.stderr.write(`inference-gateway: compiling the TypeScript sources (${project}), about half a minute on a fresh clone...\n`);
}

const host = ts.createSolutionBuilderHost(ts.sys, undefined, undefined, status);
process.exitCode = ts.createSolutionBuilder(host, [project], { verbose: true }).build();
if (process.exitCode === 0 && project === "tsconfig.build.json" && (told || !existsSync("dist/chunks"))) await import("./bundle.mjs");
