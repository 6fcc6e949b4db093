/**
 * Reads a file shipped in an installed npm package ("swagger-ui-dist/swagger-ui.css"),
 * resolved the way an import from the gateway's own code would be. `node:module` and
 * `node:fs` behave the same on Node and Deno, so both platforms share this one reader.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

export async function readPackageAsset(path: string): Promise<Uint8Array> {
  // Only "<package>/<file>" paths inside the package: a ".." could reach any file.
  if (path.split("/").some((segment) => segment === ".." || segment === "") || path.startsWith(".")) {
    throw new Error(`asset path "${path}" must be "<package>/<file>" without ".." or empty segments`);
  }
  return new Uint8Array(await readFile(require.resolve(path)));
}
