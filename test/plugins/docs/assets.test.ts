/**
 * The Swagger UI files (~2 MB) are read when the docs page is first asked for, not at start,
 * so a gateway nobody opens the page on does not hold them; once read they are kept.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPackageAsset } from "../../../adapters/package-asset.ts";
import { openStores } from "../../../adapters/stores.ts";
import { Gateway } from "../../../core/gateway.ts";
import { silentLogger } from "../../../core/log.ts";
import { builtinPlugins } from "../../../plugins/index.ts";

describe("docs assets", () => {
  let gateway: Gateway;
  const reads: string[] = [];
  let failReads = false;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "docs-assets-"));
    gateway = await Gateway.create({
      readConfig: async () => `object_store: { dir: ${JSON.stringify(dir)} }\nrelay: { embedded: false }\nservices: []\n`,
      env: {},
      importModule: () => Promise.reject(new Error("no user plugins here")),
      openStores,
      plugins: builtinPlugins,
      log: silentLogger,
      readAsset: (path) => {
        reads.push(path);
        return failReads ? Promise.reject(new Error("disk gone")) : readPackageAsset(path);
      },
    });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  const get = (path: string) => gateway.fetch(new Request(`http://gateway${path}`));

  it("answers 503 while the files cannot be read, reads nothing before the first page load, then serves them from memory", async () => {
    expect(reads).toEqual([]);

    failReads = true;
    const unavailable = await get("/docs");
    expect(unavailable.status).toBe(503);
    expect(((await unavailable.json()) as { error: { message: string } }).error.message).toContain("Swagger UI files could not be read");

    failReads = false;
    const readsBefore = reads.length;
    const css = await get("/docs/assets/swagger-ui.css");
    expect(css.status).toBe(200);
    expect(css.headers.get("content-type")).toContain("text/css");
    expect((await css.arrayBuffer()).byteLength).toBeGreaterThan(10_000);
    const readOnce = reads.length;
    expect(readOnce).toBeGreaterThan(readsBefore);

    expect((await get("/docs")).status).toBe(200);
    expect((await get("/docs/assets/swagger-ui-bundle.js")).status).toBe(200);
    expect((await get("/docs/assets/nope.js")).status).toBe(404);
    expect(reads.length).toBe(readOnce);
  });
});
