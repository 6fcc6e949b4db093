/**
 * Answers for the requests Node's HTTP server refuses before the gateway sees them, with the
 * gateway's error body (`{"error":{"message","type","code"}}`) instead of Node's empty one:
 * - unparsable framing (both Content-Length and Transfer-Encoding, a bad chunk size, a bad
 *   method...): 400; headers over Node's limit: 431; oversized chunk extensions: 413;
 * - a request not received within its time (`headersTimeout`, `requestTimeout`): 408;
 * - an `Expect` other than 100-continue: 417 (see ../expectation.ts).
 * Each says `Connection: close`, and the connection is closed after it.
 */
import { type IncomingMessage, maxHeaderSize, type Server, type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { errorBody, type ErrorCode, type ErrorType } from "../../core/errors.ts";
import { unmetExpectation } from "../expectation.ts";
import { endLingering } from "./linger.ts";

interface Answer {
  status: number;
  type: ErrorType;
  code: ErrorCode;
  message: string;
}

/** What Node puts on the errors of its "clientError" event. */
interface ClientError extends Error {
  code?: string;
  /** The HTTP parser's reason ("Transfer-Encoding can't be present with Content-Length"). */
  reason?: string;
}

function seconds(ms: number): string {
  return `${+(ms / 1000).toFixed(3)} s`;
}

/** Which limit a late request passed (see ./server-options.ts for how the two relate). */
function timeoutMessage({ headersTimeout, requestTimeout }: Server): string {
  if (requestTimeout <= 0) return `the request's headers did not arrive within ${seconds(headersTimeout)}; send them faster`;
  const fix = "send it faster, or raise server.read_timeout";
  if (headersTimeout >= requestTimeout) return `the request did not arrive within ${seconds(requestTimeout)} (server.read_timeout); ${fix}`;
  return `the request did not arrive in time: its headers must arrive within ${seconds(headersTimeout)} and the whole request within ${
    seconds(requestTimeout)
  } (server.read_timeout); ${fix}`;
}

function answerFor(error: ClientError, server: Server): Answer | undefined {
  const code = error.code ?? "";
  if (code === "HPE_HEADER_OVERFLOW") {
    // Node's limit (16 KiB unless started with --max-http-header-size), counted over all headers.
    return {
      status: 431,
      type: "request_too_large",
      code: "headers_too_large",
      message: `the request's headers are larger than this server accepts (${maxHeaderSize} bytes in all); send fewer or shorter headers`,
    };
  }
  if (code === "HPE_CHUNK_EXTENSIONS_OVERFLOW") {
    return {
      status: 413,
      type: "request_too_large",
      code: "payload_too_large",
      message: "the chunk extensions of the request body are larger than this server accepts; send the body without chunk extensions",
    };
  }
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") return { status: 408, type: "timeout_error", code: "request_timeout", message: timeoutMessage(server) };
  if (code.startsWith("HPE_")) {
    const reason = error.reason ?? error.message;
    return {
      status: 400,
      type: "invalid_request_error",
      code: "invalid_request",
      message: `the request is not valid HTTP/1.1: ${reason}; fix how the client frames its request`,
    };
  }
  // ECONNRESET, EPIPE...: the connection itself failed; there is no one to answer.
  return undefined;
}

function bodyOf({ status, type, message, code }: Answer): string {
  return JSON.stringify(errorBody(status, type, message, code));
}

function rawResponse(answer: Answer): string {
  const body = bodyOf(answer);
  return (
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ""}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** The response of the request being handled on this connection, if any (Node's own field). */
function inFlightResponse(socket: Duplex): ServerResponse | undefined {
  return (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

export function answerHttpLayerErrors(server: Server): void {
  // A connection answered and lingering: its parser fails again on every chunk still arriving.
  const answered = new WeakSet<Duplex>();
  server.on("clientError", (error: ClientError, socket: Duplex) => {
    if (answered.has(socket)) return;
    const answer = answerFor(error, server);
    const inFlight = inFlightResponse(socket);
    // No answer can be written once a response has started on this connection: it would land in
    // the middle of that response. Node's default does the same.
    if (!answer || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    answered.add(socket);
    socket.write(rawResponse(answer));
    // A timeout leaves the parser able to read a next request, and a request in flight would
    // write its own answer later: close as soon as the answer is out. A parse error stops the
    // parser for good, so the client's remaining bytes can be read and dropped.
    if (inFlight || !error.code?.startsWith("HPE_")) socket.end(() => socket.destroy());
    else endLingering(socket);
  });
  server.on("checkExpectation", (request: IncomingMessage, response: ServerResponse) => {
    const refusal = unmetExpectation(request.headers.expect);
    // Not expected: Node emits this event only for an expectation other than 100-continue.
    if (!refusal) return void server.emit("request", request, response);
    const body = bodyOf(refusal);
    response.writeHead(refusal.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...refusal.headers });
    response.end(body);
  });
}
