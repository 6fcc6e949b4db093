/**
 * The order the suite's files start in: the longest first. The workers take files from one
 * queue, so the run ends when the last file that started ends; a long file started late
 * keeps one worker busy while the others have nothing left. Vitest's own order sorts by the
 * durations in its local cache, which a fresh clone (CI) does not have: it then sorts by
 * file size, which says little about duration. So the files that take longest are listed
 * here with their seconds and start first, longest first; the other files follow in
 * Vitest's own order.
 *
 * Refresh the list when a file becomes slow or fast (docs/development.md, "Keeping CI fast"):
 * `npx vitest run --reporter=json --outputFile.json=report.json`, then
 * `node scripts/test-timings.mjs report.json`.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Seconds per file (20 s and more) in a clean-clone `.ci/run` on Node, 2026-11-29: 3 workers on
 * 2 cores beside the Deno subset (load average 8 to 9); only the order matters. workers
 * includes one wait that ran to its bound in that run.
 */
export const slowFiles: Readonly<Record<string, number>> = {
  "test/e2e/workers.test.ts": 188,
  "test/e2e/async-jobs.test.ts": 183,
  "test/reliability/gateway-kill-webhooks.test.ts": 105,
  "test/adapters/objects-contract.test.ts": 99,
  "test/reliability/relay-kill.test.ts": 82,
  "test/e2e/webhooks.test.ts": 78,
  "test/e2e/package.test.ts": 76,
  "test/reliability/batch-kill.test.ts": 68,
  "test/e2e/answer-complete.test.ts": 66,
  "test/e2e/gc.test.ts": 64,
  "test/e2e/cli.test.ts": 52,
  "test/e2e/npm-start.test.ts": 51,
  "test/e2e/foundation.test.ts": 49,
  "test/e2e/usage.test.ts": 41,
  "test/reliability/redis-ops-per-request.test.ts": 40,
  "test/e2e/llm-proxy.test.ts": 40,
  "test/reliability/two-replicas.test.ts": 37,
  "test/e2e/plugin-entry-point.test.ts": 35,
  "test/reliability/scale-out.test.ts": 34,
  "test/e2e/limits.test.ts": 33,
  "test/reliability/stores.test.ts": 32,
  "test/e2e/identity-headers.test.ts": 32,
  "test/e2e/access.test.ts": 31,
  "test/e2e/otel.test.ts": 29,
  "test/e2e/console-keys-browser.test.ts": 25,
  "test/e2e/docs.test.ts": 21,
  "test/e2e/console-browser.test.ts": 20,
};

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const weight = (spec: TestSpecification) => slowFiles[relative(spec.project.config.root, spec.moduleId).replaceAll("\\", "/")] ?? 0;
    const rest = await super.sort(files.filter((spec) => weight(spec) === 0));
    const listed = files.filter((spec) => weight(spec) > 0).sort((a, b) => weight(b) - weight(a));
    return [...listed, ...rest];
  }
}
