/**
 * `Host` (RFC 9112 3.2): a server must refuse with 400 an HTTP/1.1 request without a Host
 * header, or with more than one. Both runtimes answer it with the error body: Node's own check
 * would answer an empty 400 (the adapter turns it off and asks here instead), and Deno's server
 * lets a request without Host through, as if sent to `localhost`.
 */
import { GatewayError } from "../core/errors.ts";

/**
 * The 400 for a request with `sent` Host header lines; undefined when it may go on. `required`:
 * whether the request must carry one (HTTP/1.1; an HTTP/1.0 request may leave it out).
 */
export function hostRefusal(sent: number, required: boolean): GatewayError | undefined {
  if (sent > 1) return new GatewayError(400, "invalid_request_error", `the Host header was sent ${sent} times; send it once`, { connection: "close" });
  if (sent === 1 || !required) return undefined;
  return new GatewayError(
    400,
    "invalid_request_error",
    "the request has no Host header, which HTTP/1.1 requires; send Host: <host>:<port> of the gateway (HTTP clients do this by themselves)",
    // The request's body is not read: the connection is not reused.
    { connection: "close" },
  );
}
