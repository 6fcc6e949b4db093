/**
 * A hand-written HTTP/1.1 request over a plain socket, for headers `fetch` refuses to send
 * (`Connection: x-custom`, `Keep-Alive`, `TE`, `Upgrade`...). The request asks the server to
 * close the connection, so the answer is everything read until the socket ends.
 */
import { connect } from "node:net";

export interface RawResponse {
  status: number;
  /** Everything received: interim answers, header block and body (a chunked body is left encoded). */
  text: string;
}

export function rawRequest(port: number, head: string, body = ""): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      // The final status: a `100 Continue` interim answer may come first.
      const statuses = [...text.matchAll(/^HTTP\/1\.[01] (\d{3})/gm)].map((m) => Number(m[1]));
      const status = statuses.find((s) => s >= 200) ?? 0;
      resolve({ status, text });
    });
    socket.on("connect", () => {
      socket.write(`${head.trim().split("\n").map((line) => line.trim()).join("\r\n")}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  });
}

export interface RawAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
  /** The socket error that ended the exchange ("ECONNRESET"), if any. */
  error?: string;
}

/**
 * Sends `data` exactly as given (malformed framing, oversized headers, half a request...) and
 * resolves with the one answer read until the connection closes (this side closes it once the
 * answer is complete, or after `timeoutMs`).
 */
export function rawExchange(port: number, data: string, timeoutMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    // A server that never answers nor closes: give up, with what came so far (status 0 if nothing).
    const deadline = setTimeout(() => socket.destroy(), timeoutMs);
    let text = "";
    let error: string | undefined;
    const parse = (): RawAnswer & { complete: boolean } => {
      const split = text.indexOf("\r\n\r\n");
      const [statusLine, ...lines] = (split < 0 ? text : text.slice(0, split)).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
      const bytes = split < 0 ? "" : text.slice(split + 4);
      const complete = split >= 0 && headers["content-length"] !== undefined && bytes.length >= Number(headers["content-length"]);
      return { status, headers, body: Buffer.from(bytes, "latin1").toString("utf8"), error, complete };
    };
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      text += chunk;
      // The whole answer is in: say so by closing this side, as a client done with the connection would.
      if (parse().complete) socket.end();
    });
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on("close", () => {
      clearTimeout(deadline);
      const { complete: _, ...answer } = parse();
      resolve(answer);
    });
    socket.on("connect", () => socket.write(data));
  });
}
