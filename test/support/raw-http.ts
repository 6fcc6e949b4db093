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
