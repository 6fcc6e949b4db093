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
 * Seconds per file in a run of the whole suite on Node (3 workers on 2 cores busy with other
 * work, so about twice a quiet machine's); only the order matters.
 */
export const slowFiles: Readonly<Record<string, number>> = {
  "test/e2e/async-jobs.test.ts": 86,
  "test/reliability/two-replicas.test.ts": 66,
  "test/reliability/relay-kill.test.ts": 55,
  "test/e2e/answer-complete.test.ts": 53,
  "test/reliability/gateway-kill-webhooks.test.ts": 49,
  "test/adapters/objects-contract.test.ts": 41,
  "test/e2e/gc.test.ts": 35,
  "test/e2e/foundation.test.ts": 30,
  "test/reliability/scale-out.test.ts": 28,
  "test/e2e/package.test.ts": 25,
  "test/reliability/redis-ops-per-request.test.ts": 25,
  "test/e2e/otel.test.ts": 24,
  "test/e2e/webhooks.test.ts": 24,
  "test/e2e/cli.test.ts": 23,
  "test/e2e/access.test.ts": 18,
  "test/e2e/llm-proxy.test.ts": 16,
  "test/e2e/npm-start.test.ts": 16,
  "test/deploy/compose-topology.test.ts": 12,
  "test/e2e/relay-metrics.test.ts": 12,
  "test/e2e/console-browser.test.ts": 10,
  "test/e2e/identity-headers.test.ts": 10,
  "test/e2e/limits.test.ts": 10,
  "test/reliability/stores.test.ts": 10,
  "test/e2e/docs.test.ts": 9,
  "test/e2e/http-layer.test.ts": 9,
  "test/plugins/admin/admin-token.test.ts": 9,
  "test/adapters/kv-redis-sentinel-auth.test.ts": 8,
  "test/adapters/kv-redis-tls.test.ts": 8,
  "test/e2e/sync-proxy.test.ts": 8,
  "test/reliability/frozen-redis.test.ts": 8,
};

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const weight = (spec: TestSpecification) => slowFiles[relative(spec.project.config.root, spec.moduleId).replaceAll("\\", "/")] ?? 0;
    const rest = await super.sort(files.filter((spec) => weight(spec) === 0));
    const listed = files.filter((spec) => weight(spec) > 0).sort((a, b) => weight(b) - weight(a));
    return [...listed, ...rest];
  }
}
