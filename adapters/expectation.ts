/**
 * `Expect` (RFC 9110 10.1.1): the one expectation the gateway meets is `100-continue`; any other
 * is refused with 417 and the error body before the request is handled, the same on both
 * runtimes. Node's server refuses such a request itself (the adapter gives that answer its
 * body through the "checkExpectation" event); Deno's lets it through to the handler.
 */
import { GatewayError } from "../core/errors.ts";

/** Node's own test for a `100-continue` expectation, so both runtimes accept the same values. */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/** The 417 for an `Expect` header the gateway cannot meet; undefined when it can (or none came). */
export function unmetExpectation(expect: string | null | undefined): GatewayError | undefined {
  if (expect === null || expect === undefined || CONTINUE.test(expect)) return undefined;
  return new GatewayError(
    417,
    "invalid_request_error",
    `the Expect header ${JSON.stringify(expect)} cannot be met: the only expectation this server supports is "100-continue"; send that, or no Expect header`,
    // The body was not read (the client may be holding it back), so the connection is not reused.
    { connection: "close" },
    "expectation_failed",
  );
}
