/**
 * How many times a header came in a request, from Node's `rawHeaders` (name, value, name,
 * value...: every line as received). The `Request` the core gets has them joined into one
 * value, so repeats of an identity header can only be seen here (see `RequestSlot.timesSent`).
 */
export function timesSentIn(rawHeaders: readonly string[]): (name: string) => number {
  return function timesSent(name) {
    let times = 0;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const sent = rawHeaders[i]!;
      if (sent.length === name.length && sent.toLowerCase() === name) times++;
    }
    return times;
  };
}
