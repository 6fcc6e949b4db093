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
 * Seconds per file (7 s and more) in a clean-clone `.ci/run` on Node, 2026-11-30: 3 workers on
 * 2 cores beside the Deno subset (both cores busy throughout); only the order matters.
 */
export const slowFiles: Readonly<Record<string, number>> = {
  "test/e2e/workers.test.ts": 84,
  "test/e2e/async-jobs.test.ts": 78,
  "test/adapters/objects-contract.test.ts": 65,
  "test/reliability/gateway-kill-webhooks.test.ts": 51,
  "test/reliability/batch-kill.test.ts": 50,
  "test/e2e/package.test.ts": 43,
  "test/reliability/redis-ops-per-request.test.ts": 40,
  "test/e2e/gc.test.ts": 33,
  "test/e2e/answer-complete.test.ts": 31,
  "test/reliability/relay-kill.test.ts": 30,
  "test/reliability/scale-out.test.ts": 28,
  "test/e2e/webhooks.test.ts": 27,
  "test/reliability/two-replicas.test.ts": 26,
  "test/e2e/foundation.test.ts": 19,
  "test/e2e/cli.test.ts": 18,
  "test/e2e/access.test.ts": 14,
  "test/e2e/npm-start.test.ts": 14,
  "test/e2e/otel.test.ts": 14,
  "test/e2e/plugin-entry-point.test.ts": 13,
  "test/e2e/llm-proxy.test.ts": 12,
  "test/adapters/kv-redis-sentinel-auth.test.ts": 12,
  "test/adapters/kv-redis-tls-scaleout.test.ts": 11,
  "test/plugins/admin/admin-token.test.ts": 10,
  "test/e2e/usage.test.ts": 8,
  "test/e2e/limits.test.ts": 8,
  "test/e2e/console-keys-browser.test.ts": 8,
  "test/reliability/stores.test.ts": 7,
};

/** The same for the Deno subset (`deno task test`, 2 workers), 5 s and more, in the same run. */
export const slowDenoFiles: Readonly<Record<string, number>> = {
  "test/e2e/async-jobs.test.ts": 62,
  "test/adapters/objects-contract.test.ts": 54,
  "test/e2e/workers.test.ts": 53,
  "test/reliability/scale-out.test.ts": 29,
  "test/e2e/sync-proxy.test.ts": 27,
  "test/e2e/foundation.test.ts": 21,
  "test/e2e/cli.test.ts": 21,
  "test/e2e/otel.test.ts": 17,
  "test/e2e/llm-proxy.test.ts": 13,
  "test/adapters/kv-redis-tls-scaleout.test.ts": 11,
  "test/adapters/kv-redis-sentinel-auth.test.ts": 11,
  "test/e2e/relay-metrics.test.ts": 10,
  "test/e2e/batches.test.ts": 10,
  "test/e2e/identity-headers.test.ts": 8,
  "test/e2e/responses-in.test.ts": 7,
  "test/e2e/plugin-entry-point.test.ts": 7,
  "test/adapters/kv-redis-scaleout.test.ts": 7,
  "test/reliability/frozen-redis.test.ts": 6,
  "test/plugins/async-jobs/jobs.test.ts": 5,
};

const onDeno = typeof (globalThis as { Deno?: unknown }).Deno === "object";

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = onDeno ? slowDenoFiles : slowFiles;
    const weight = (spec: TestSpecification) => seconds[relative(spec.project.config.root, spec.moduleId).replaceAll("\\", "/")] ?? 0;
    const rest = await super.sort(files.filter((spec) => weight(spec) === 0));
    const listed = files.filter((spec) => weight(spec) > 0).sort((a, b) => weight(b) - weight(a));
    return [...listed, ...rest];
  }
}
