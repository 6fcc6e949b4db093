/**
 * The Swagger UI files, read once per process through the runtime's asset reader (plugins
 * never touch the file system). They never change while the process runs, so every
 * runtime (hot reload builds new ones) shares one copy; a failed read is retried by the
 * next runtime.
 */
import { UI_ASSETS } from "./page.ts";

export type AssetFiles = ReadonlyMap<string, Uint8Array<ArrayBuffer>>;

let shared: Promise<AssetFiles> | undefined;

export function loadAssets(read: (path: string) => Promise<Uint8Array>): Promise<AssetFiles> {
  if (!shared) {
    const loading = Promise.all(
      Object.keys(UI_ASSETS).map(async (file) => [file, new Uint8Array(await read(`swagger-ui-dist/${file}`))] as const),
    ).then((entries) => new Map(entries));
    shared = loading;
    loading.catch(() => {
      if (shared === loading) shared = undefined;
    });
  }
  return shared;
}
