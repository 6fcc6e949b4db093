/**
 * Bundles the Node command line and the public plugin entry, after `tsc -b` (`npm run build`).
 *
 * Why: Node 20 loads ES modules one file at a time, and the gateway imports about 700 of them
 * (its own, TypeBox's, Hono's, yaml's): that was most of a process start, 0.64 CPU s on the
 * 2-core CI machine, paid by every gateway, relay and worker process and by the suite's hundreds
 * of gateway starts. Bundled, a start takes 0.36 CPU s (docs/development.md says how it was measured).
 *
 * - Written over tsc's own `dist/adapters/node/cli.js` and `dist/core/public/plugin.js`, so every
 *   documented path (the bin, `npm start`, the deploy files, `inference-gateway/plugin`) stays.
 *   The `.d.ts` files stay tsc's.
 * - Both entries share their chunks (`dist/chunks/`): a plugin loaded with `plugins.load` that
 *   imports `inference-gateway/plugin` gets the very classes the gateway checks with
 *   `instanceof` (GatewayError, StreamRefused), not a second copy.
 * - Code splitting keeps what the gateway imports only when configured (the S3 and Redis clients,
 *   OpenTelemetry, the provider SDKs) out of a start, as the unbundled files do.
 * - The packages in BUNDLED are bundled (many files each); the others stay packages, resolved
 *   from node_modules at run time as before.
 */
import { readFileSync, rmSync } from "node:fs";
import { build } from "esbuild";

const root = new URL("..", import.meta.url).pathname;

/**
 * Packages bundled into the chunks: many files each, loaded by most starts (the S3 and Redis
 * clients, their AWS and Smithy parts, the backends' HTTP client). A package stays external when
 * a plugin outside the repository may share it with the gateway (OpenTelemetry's API, whose
 * copies meet in one global registry; prom-client, whose registries take metrics from plugins)
 * or when a bundled one's dependency would then load a second copy: `@aws-sdk/lib-storage` is
 * bundled with the S3 client, or it would load its own. `@aws-sdk/credential-provider-node` stays
 * a package: only Bedrock without an `api_key` imports it, dynamically, and bundled its
 * `defaultProvider` was not on the imported module (test/e2e/providers.test.ts).
 */
const BUNDLED = new Set([
  "@sinclair/typebox",
  "hono",
  "yaml",
  "redis",
  "undici",
  "@aws-sdk/client-s3",
  "@aws-sdk/lib-storage",
  "@smithy/eventstream-codec",
  "@smithy/hash-node",
  "@smithy/signature-v4",
]);

const { dependencies, peerDependencies } = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
const external = [...Object.keys(dependencies), ...Object.keys(peerDependencies ?? {})]
  .filter((name) => !BUNDLED.has(name))
  .flatMap((name) => [name, `${name}/*`]);

// The chunks' names carry their content's hash: without this, every rebuild would leave the
// previous ones behind, and `npm pack` of a working tree would ship them all.
rmSync(`${root}dist/chunks`, { recursive: true, force: true });

await build({
  absWorkingDir: root,
  entryPoints: ["adapters/node/cli.ts", "core/public/plugin.ts"],
  outbase: ".",
  outdir: "dist",
  entryNames: "[dir]/[name]",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: "linked",
  external,
  // yaml's Node build is CommonJS and requires Node's modules; an ES-module bundle has no
  // `require` of its own.
  banner: { js: 'import { createRequire as createRequireForBundle } from "node:module"; const require = createRequireForBundle(import.meta.url);' },
  logLevel: "warning",
});
