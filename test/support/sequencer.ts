/**
 * The order the suite's files start in: the longest first. Two workers take files from one
 * queue, so the run ends when the last file that started ends; a long file started late
 * keeps one worker busy while the other has nothing left. Vitest's own order sorts by the
 * durations in its local cache, which a fresh clone (CI) does not have: it then sorts by
 * file size, which says little about duration. So the files that take longest are listed
 * here, with their seconds on a quiet 2-core machine, and start first, longest first; the
 * other files follow in Vitest's own order.
 *
 * Refresh the list when a file becomes slow or fast (docs/development.md, "Keeping CI fast"):
 * `npx vitest run --reporter=json --outputFile.json=report.json`, then
 * `node scripts/test-timings.mjs report.json`.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** Seconds per file, quiet machine, Node; an approximate weight, only the order matters. */
export const slowFiles: Readonly<Record<string, number>> = {
  "test/reliability/two-replicas.test.ts": 60,
  "test/reliability/relay-kill.test.ts": 40,
  "test/reliability/gateway-kill-webhooks.test.ts": 30,
  "test/e2e/async-jobs.test.ts": 30,
  "test/reliability/scale-out.test.ts": 20,
  "test/e2e/gc.test.ts": 20,
  "test/e2e/answer-complete.test.ts": 20,
  "test/e2e/npm-start.test.ts": 20,
  "test/adapters/objects-contract.test.ts": 20,
  "test/e2e/webhooks.test.ts": 18,
  "test/e2e/access.test.ts": 15,
  "test/e2e/plugin-entry-point.test.ts": 15,
  "test/e2e/foundation.test.ts": 14,
  "test/e2e/cli.test.ts": 14,
  "test/reliability/redis-ops-per-request.test.ts": 13,
  "test/e2e/otel.test.ts": 12,
  "test/e2e/package.test.ts": 12,
  "test/e2e/identity-headers.test.ts": 10,
  "test/e2e/relay-metrics.test.ts": 10,
  "test/docs/snippets.test.ts": 9,
  "test/e2e/llm-proxy.test.ts": 9,
  "test/e2e/sync-proxy.test.ts": 8,
  "test/reliability/stores.test.ts": 8,
  "test/e2e/docs.test.ts": 8,
  "test/reliability/frozen-redis.test.ts": 7,
};

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const weight = (spec: TestSpecification) => slowFiles[relative(spec.project.config.root, spec.moduleId).replaceAll("\\", "/")] ?? 0;
    const rest = await super.sort(files.filter((spec) => weight(spec) === 0));
    const listed = files.filter((spec) => weight(spec) > 0).sort((a, b) => weight(b) - weight(a));
    return [...listed, ...rest];
  }
}
