/**
 * `traces.ignore_paths`: a request whose path is one of them, or under one of them
 * ("/docs" also covers "/docs/assets/..."), gets no span, and neither do the backend calls
 * it makes.
 */
export function ignoredPaths(paths: readonly string[]): (path: string) => boolean {
  const list = paths.map((p) => (p.length > 1 ? p.replace(/\/+$/, "") : p));
  return (path) => list.some((p) => path === p || path.startsWith(p.endsWith("/") ? p : `${p}/`));
}
