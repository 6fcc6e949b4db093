/**
 * `deno task test`: what the suite runs again on Deno. `npm test` runs every test on Node;
 * running all of them a second time on Deno doubled CI for little: most tests check the
 * gateway's own logic, which is the same code on both runtimes. Deno runs two kinds of test.
 *
 * What the runtime can change, because the runtime's own code does the work:
 * - the store adapters (node-redis over Deno's sockets, TLS, Sentinel and Cluster, and a reply
 *   read while the event loop was busy; the AWS SDK, the file system and the encryption streams,
 *   100 MB each with bounded memory);
 * - the core where the runtime's web platform does the work: streams (an LLM answer's stream,
 *   the steps before an answer's end for every kind of body, the JSON body reader's byte
 *   bound), the pipeline on the runtime's Request and Response, the event loop's turns (the
 *   store writes gathered in a turn);
 * - the runtime adapter (adapters/deno) in a real gateway process: the HTTP server
 *   (http-layer, header repeats in identity-headers), start, reload, signals and shutdown
 *   (foundation, a standalone relay's exit in relay-metrics, several workers sharing a port in
 *   workers), the command line and its
 *   `deno task start` wrappers (cli), a plugin loaded from outside the repo
 *   (plugin-entry-point), the runtime's process metrics (default-metrics), the console's files
 *   as the process serves them (console);
 * - uploads streamed through the runtime's request bodies (sync-proxy's 50 MB, async-jobs'
 *   150 MB), the relay's call and its abort (async-jobs), webhook delivery through the
 *   runtime's pinned client, the OpenTelemetry SDK and OTLP export (otel), the in-process
 *   async-jobs tests (the runtime's fetch sends the upload);
 * - guardrails (test/plugins/guardrails/guardrails.test.ts): streams held back and ended with an
 *   error event through the runtime's streams, the http checker's timeout through its timers and
 *   fetch abort, both official SDKs on it;
 * - the inbound Responses API (responses-in): its stored responses are sealed with the runtime's
 *   WebCrypto (AES-GCM, HKDF) and kept in both stores, and its events are numbered through the
 *   runtime's streams;
 * - the providers' own libraries under the runtime (providers): the AWS SDK's SigV4 signer,
 *   credential chain and event-stream codec over Bedrock's binary streams, google-auth-library
 *   fetching Vertex AI tokens;
 * - failure handling under the runtime's sockets: a frozen Redis, a Sentinel failover and a
 *   Cluster primary restart (scale-out: node-redis's Sentinel client on Deno once kept
 *   failing after a failover, fixed with the held primary connection, link-sentinel.ts).
 *
 * A parity set, one end-to-end file per request mode, so each mode is seen answering on
 * Deno from request to backend and back: sync-proxy, llm-proxy with llm-streams (SSE through
 * the runtime's streams), async-jobs, batches. Within async-jobs the queue's own logic is left to Node
 * (`inDenoSubset`, test/support/gateway-process.ts).
 *
 * Left to Node: the inbound Messages API, the stream cache and backend retry rounds (the
 * LLM handler's and the cache's logic, which llm-proxy and llm-streams already run on Deno
 * end to end); the core's and the adapters' logic on plain values, the same JavaScript on
 * both engines: config parsing and validation, the registry, the plugin host's order,
 * contracts and refusals (their `plugins.load` modules are handed in, not imported: a real
 * import on Deno is plugin-entry-point's), error codes, durations, backoff, metric labels, the
 * path and JSON syntax checks, the pure-JavaScript SHA-256, the log's repeat folding and the
 * readiness bound (both on fake timers; a real frozen store's readiness is frozen-redis's), the
 * memory store's expiry and eviction bookkeeping and the parent watch on a written process
 * table (the real wrappers are cli's); and the checks that read the source rather than run it
 * (layering, the public entry's exported types). Each file in the subset costs Deno time, so a
 * file of logic is not in it.
 *
 * To run any other file, or a whole file without the subset's skips, on Deno:
 * `npx deno task test:all test/path/file.test.ts`.
 */
import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

export const denoSubset = [
  "test/adapters/kv-contract.test.ts",
  "test/adapters/kv-redis-*.test.ts",
  "test/adapters/objects-contract.test.ts",
  "test/core/llm/stream.test.ts",
  "test/core/pipeline/answer-end.test.ts",
  "test/core/pipeline/pipeline.test.ts",
  "test/core/request-body/json-body.test.ts",
  "test/core/stores/end-of-turn.test.ts",
  "test/e2e/sync-proxy.test.ts",
  "test/e2e/llm-proxy.test.ts",
  "test/e2e/llm-streams.test.ts",
  "test/e2e/responses-in.test.ts",
  "test/e2e/providers.test.ts",
  "test/e2e/async-jobs.test.ts",
  "test/e2e/batches.test.ts",
  "test/e2e/http-layer.test.ts",
  "test/e2e/identity-headers.test.ts",
  "test/e2e/foundation.test.ts",
  "test/e2e/relay-metrics.test.ts",
  "test/e2e/workers.test.ts",
  "test/e2e/plugin-entry-point.test.ts",
  "test/e2e/otel.test.ts",
  "test/e2e/default-metrics.test.ts",
  "test/e2e/cli.test.ts",
  "test/e2e/console.test.ts",
  "test/plugins/webhooks/pinned-delivery.test.ts",
  "test/plugins/async-jobs/jobs.test.ts",
  "test/plugins/guardrails/guardrails.test.ts",
  "test/reliability/frozen-redis.test.ts",
  "test/reliability/scale-out.test.ts",
];

/** Files that measure their own process's memory: each runs in a fresh process (below). */
const measuresOwnMemory = ["test/adapters/objects-contract.test.ts"];

// The suite's `include` stays out: a project's own list would be added to it, not put in its place.
const { include: _everyFile, ...shared } = base.test ?? {};

export default defineConfig({
  test: {
    ...shared,
    // CI runs it beside the Node suite (.ci/run), the longer of the two: two files at a time
    // leave the Node suite more of the 2 cores.
    maxWorkers: 2,
    env: { GATEWAY_TEST_DENO_SUBSET: "1" },
    projects: [
      // The object stores' 100 MB tests measure their own process's memory, which under Deno,
      // in a worker that ran other files before, once grew by 90 MB (garbage Deno had not
      // collected yet), past the bound the test sets: a fresh process for them.
      { extends: true, test: { name: "deno-own-process", include: measuresOwnMemory, isolate: true } },
      // The rest share a process per worker, as on Node: a fresh Deno process and fresh imports
      // per file cost about 1 CPU s each.
      { extends: true, test: { name: "deno", include: denoSubset.filter((file) => !measuresOwnMemory.includes(file)), isolate: false } },
    ],
  },
});
