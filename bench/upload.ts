/**
 * One 100 MiB upload, streamed to the target without ever being whole in the bench's own
 * memory, and the peak RSS the serving process reached above where it started.
 */
import { request } from "node:http";
import { performance } from "node:perf_hooks";
import { MULTIPART_BOUNDARY, MULTIPART_TYPE, uploadAnswer } from "./fixtures.ts";
import type { Target } from "./measure.ts";
import { memory, resetPeak, RssSampler } from "./procs.ts";

export const UPLOAD_BYTES = 100 * 1024 * 1024;

export interface UploadResult {
  /** Peak RSS during the upload minus RSS just before it. */
  growthMb: number;
  seconds: number;
  status: number;
  ok: boolean;
}

/** `check` judges the answer; the mock's own answer is `uploadAnswer(bytes)`. */
export async function uploadOnce(
  target: Target,
  path: string,
  model: string,
  check: (status: number, body: string, length: number) => boolean,
): Promise<UploadResult> {
  const head = Buffer.from(
    `--${MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n` +
      `--${MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${MULTIPART_BOUNDARY}--\r\n`);
  const length = head.length + UPLOAD_BYTES + tail.length;
  const piece = Buffer.alloc(1024 * 1024, 0x62);

  await new Promise((resolve) => setTimeout(resolve, 300));
  const before = memory(target.pid).rssMb;
  const exact = resetPeak(target.pid);
  const sampler = new RssSampler(target.pid);
  sampler.start(20);
  const started = performance.now();
  const url = new URL(target.base + path);
  const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { "content-type": MULTIPART_TYPE, "content-length": String(length) } },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    let sent = 0;
    const write = () => {
      let ok = true;
      while (ok && sent < UPLOAD_BYTES) {
        ok = req.write(piece);
        sent += piece.length;
      }
      if (sent >= UPLOAD_BYTES) req.end(tail);
      else req.once("drain", write);
    };
    req.write(head);
    write();
  });
  const seconds = (performance.now() - started) / 1000;
  const sampled = sampler.stop();
  const peak = exact ? Math.max(memory(target.pid).peakMb, sampled) : sampled;
  return { growthMb: peak - before, seconds, status, ok: check(status, body, length) };
}

export const mockAnswered = (status: number, body: string, length: number) => status === 200 && body === uploadAnswer(length);
export const jobAccepted = (status: number, body: string) => status === 202 && body.includes('"status":"pending"');
