/**
 * How many times a header came in a request on Deno. `Headers.get` joins repeats with ", "
 * and Deno.serve exposes no raw header lines, but Deno's `Headers` keeps the list as
 * received (one [name, value] pair per line) under an internal symbol, found here by its
 * description. The test suite checks on Deno that repeats are seen (test/e2e/identity-headers).
 */
const HEADER_LIST = Object.getOwnPropertySymbols(new Headers()).find((symbol) => symbol.description === "header list");

function headerList(headers: Headers): unknown {
  return HEADER_LIST === undefined ? undefined : (headers as unknown as Record<symbol, unknown>)[HEADER_LIST];
}

/** False on a Deno whose `Headers` no longer keep repeats apart where this module looks. */
export const repeatsVisible = (() => {
  const probe = new Headers([["x-probe", "1"], ["X-Probe", "2"]]);
  const list = headerList(probe);
  return Array.isArray(list) && list.length === 2;
})();

export function timesSentOf(request: Request): ((name: string) => number) | undefined {
  if (!repeatsVisible) return undefined;
  return function timesSent(name) {
    const headers = request.headers;
    // Deno.serve fills a request's list on first use of its headers.
    if (!headers.has(name)) return 0;
    const list = headerList(headers);
    if (!Array.isArray(list)) return 1;
    let times = 0;
    for (const entry of list as Array<[string, string]>) {
      if (entry[0].length === name.length && entry[0].toLowerCase() === name) times++;
    }
    return times;
  };
}
