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
 * Seconds per file in a run of the whole suite on Node (3 workers on 2 cores while other work
 * kept the load average at 13 to 25, so three to four times a quiet machine's); only the order
 * matters. batch-kill is its 2,000-line run alone; workers is an estimate, its restart tests
 * timed out in that run.
 */
export const slowFiles: Readonly<Record<string, number>> = {
  "test/e2e/async-jobs.test.ts": 305,
  "test/e2e/answer-complete.test.ts": 154,
  "test/adapters/objects-contract.test.ts": 147,
  "test/reliability/relay-kill.test.ts": 146,
  "test/e2e/cli.test.ts": 114,
  "test/reliability/gateway-kill-webhooks.test.ts": 114,
  "test/e2e/limits.test.ts": 112,
  "test/reliability/batch-kill.test.ts": 111,
  "test/e2e/gc.test.ts": 105,
  "test/e2e/access.test.ts": 99,
  "test/e2e/package.test.ts": 99,
  "test/reliability/two-replicas.test.ts": 97,
  "test/e2e/foundation.test.ts": 91,
  "test/e2e/workers.test.ts": 90,
  "test/e2e/plugin-entry-point.test.ts": 84,
  "test/e2e/npm-start.test.ts": 77,
  "test/e2e/identity-headers.test.ts": 74,
  "test/e2e/webhooks.test.ts": 71,
  "test/e2e/usage.test.ts": 63,
  "test/reliability/stores.test.ts": 62,
  "test/e2e/llm-proxy.test.ts": 61,
  "test/e2e/docs.test.ts": 60,
  "test/e2e/sync-proxy.test.ts": 60,
  "test/e2e/http-layer.test.ts": 58,
  "test/e2e/otel.test.ts": 54,
  "test/reliability/redis-ops-per-request.test.ts": 52,
  "test/reliability/frozen-redis.test.ts": 49,
  "test/reliability/scale-out.test.ts": 49,
  "test/docs/snippets.test.ts": 43,
  "test/e2e/batches.test.ts": 40,
  "test/e2e/llm-streams.test.ts": 39,
  "test/deploy/compose-topology.test.ts": 38,
  "test/adapters/kv-redis-tls.test.ts": 36,
  "test/e2e/audit-log.test.ts": 36,
  "test/plugins/batches/lifecycle.test.ts": 33,
  "test/plugins/async-jobs/jobs.test.ts": 30,
  "test/e2e/relay-metrics.test.ts": 28,
  "test/deploy/manifests.test.ts": 28,
  "test/e2e/default-metrics.test.ts": 27,
  "test/adapters/kv-contract.test.ts": 26,
  "test/adapters/kv-redis-sentinel-auth.test.ts": 26,
  "test/e2e/llm-usage-fields.test.ts": 25,
  "test/plugins/gc/gc.test.ts": 25,
};

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const weight = (spec: TestSpecification) => slowFiles[relative(spec.project.config.root, spec.moduleId).replaceAll("\\", "/")] ?? 0;
    const rest = await super.sort(files.filter((spec) => weight(spec) === 0));
    const listed = files.filter((spec) => weight(spec) > 0).sort((a, b) => weight(b) - weight(a));
    return [...listed, ...rest];
  }
}
