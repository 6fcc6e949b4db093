/**
 * The gateway's request listener on Node: @hono/node-server's, with the gateway's error body
 * (`{"error":{"message","type","code"}}`) where it would answer an empty 400 (a request it cannot
 * turn into a `Request`: an invalid Host header, a backslash in the path...), and the Host rule
 * of ../host-header.ts applied before it (the server is created with Node's own Host check off,
 * see ./server-options.ts).
 */
import { getRequestListener, type HttpBindings, RequestError } from "@hono/node-server";
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorBody, errors, toErrorResponse } from "../../core/errors.ts";
import { hostRefusal } from "../host-header.ts";
import { timesSentIn } from "./header-repeats.ts";
import { closeLingering } from "./linger.ts";

type Fetch = (request: Request, env: HttpBindings) => Promise<Response>;
type Listener = (incoming: IncomingMessage, outgoing: ServerResponse) => void;

/** The answer to a request @hono/node-server could not build, or to a handler that threw at once. */
function requestErrorAnswer(error: unknown): Response {
  if (!(error instanceof RequestError)) return toErrorResponse(error);
  const answer = errors.badRequest(
    `the request's target or Host header cannot be read (${error.message}); send a path starting with "/" and the gateway's host:port as Host`,
  ).toResponse();
  answer.headers.set("connection", "close");
  return answer;
}

function refuse(outgoing: ServerResponse, incoming: IncomingMessage, status: number, headers: Record<string, string>, body: string): void {
  outgoing.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  outgoing.end(body);
  // A body still coming is read and dropped before the socket closes, so the client gets the answer.
  if (!incoming.complete) closeLingering(incoming.socket);
}

/**
 * The host an HTTP/1.0 request without Host is taken to be sent to (the listen address, as a
 * URL host): without it, one to a gateway listening on all interfaces could not be read.
 */
function hostOf(listenHostname: string | undefined): string {
  if (listenHostname === undefined) return "localhost";
  return listenHostname.includes(":") ? `[${listenHostname}]` : listenHostname;
}

export function gatewayRequestListener(fetch: Fetch, listenHostname: string | undefined): Listener {
  const listener = getRequestListener(fetch as (request: Request, env: unknown) => Promise<Response>, {
    hostname: hostOf(listenHostname),
    errorHandler: requestErrorAnswer,
  });
  return function gatewayRequest(incoming, outgoing) {
    const sent = timesSentIn(incoming.rawHeaders)("host");
    const refusal = hostRefusal(sent, incoming.httpVersionMajor === 1 && incoming.httpVersionMinor >= 1);
    if (refusal) {
      return refuse(
        outgoing,
        incoming,
        refusal.status,
        refusal.headers,
        JSON.stringify(errorBody(refusal.status, refusal.type, refusal.message, refusal.code)),
      );
    }
    void listener(incoming, outgoing);
  };
}
