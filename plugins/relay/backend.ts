/**
 * One inference call for a job (docs/design.md#the-relay): the stored input goes to the backend as
 * multipart field `file` (plus `model`) at the service's address + the operation path,
 * streamed from the object store. With several `backends[]` a network error or 5xx moves
 * on to the next one, as on the sync path (each attempt re-reads the input).
 *
 * The answer becomes the job's result: a JSON body as it is; any other content type is
 * wrapped as `{"content_type", "body"}`, with `body` the text for textual types and
 * base64 (plus `"encoding": "base64"`) for binary ones. A non-2xx answer or a network
 * error fails the attempt with an error naming the status or the cause, marked transient
 * (worth a retry, retry-policy.ts) for a network error or a status in the service's
 * `retry.on_statuses`.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { backendOrder, type BackendTarget, withFailover } from "../../core/proxy/backends.ts";
import type { ObjectStore } from "../../core/stores/objects.ts";
import type { JobRecord } from "../../core/jobs/types.ts";
import { parseRetryAfter } from "../../core/proxy/retry-after.ts";
import type { TransientFailure } from "./retry-policy.ts";

export type BackendOutcome =
  /** `stored` is the result JSON text as it is saved (a JSON answer is kept byte for byte). */
  | { ok: true; result: unknown; stored: string }
  | { ok: false; error: string; transient?: TransientFailure };

export interface BackendDeps {
  fetch: typeof fetch;
  objects: ObjectStore;
  newId(): string;
  /** The clock's now (ms), for a Retry-After given as a date. */
  now(): number;
}

/** The job's input cannot be read: no backend failed, and trying again would not help. */
class InputUnavailable extends Error {}

const ERROR_SNIPPET = 500;

/** The operation path on the target: `{model}` becomes the model sent; a trailing `/*` is dropped. */
export function backendUrl(base: string, path: string, model: string): string {
  const concrete = path.replaceAll("{model}", encodeURIComponent(model)).replace(/\/\*$/, "");
  return `${base.replace(/\/+$/, "")}${concrete}`;
}

/** Content-Disposition parameter quoting as browsers do it (WHATWG multipart/form-data). */
function quoted(value: string): string {
  return value.replace(/\r/g, "%0D").replace(/\n/g, "%0A").replace(/"/g, "%22");
}

/**
 * A multipart/form-data body streaming `file` after the text fields, and its length in
 * bytes given the file's size (sent as Content-Length: some servers refuse chunked uploads).
 */
export function multipartBody(
  boundary: string,
  fields: ReadonlyArray<readonly [string, string]>,
  file: { filename: string; contentType: string; size: number; body: ReadableStream<Uint8Array> },
): { body: ReadableStream<Uint8Array>; length: number } {
  const encoder = new TextEncoder();
  let head = "";
  for (const [name, value] of fields) {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(name)}"\r\n\r\n${value}\r\n`;
  }
  head += `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoted(file.filename)}"\r\n`;
  head += `Content-Type: ${file.contentType || "application/octet-stream"}\r\n\r\n`;
  const headBytes = encoder.encode(head);
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const reader = file.body.getReader();
  let stage: "head" | "file" | "done" = "head";
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (stage === "head") {
        stage = "file";
        controller.enqueue(headBytes);
        return;
      }
      if (stage === "file") {
        const chunk = await reader.read();
        if (!chunk.done) {
          controller.enqueue(chunk.value);
          return;
        }
        stage = "done";
      }
      controller.enqueue(tail);
      controller.close();
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return { body, length: headBytes.byteLength + file.size + tail.byteLength };
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const detail = cause instanceof Error ? (cause as { code?: string }).code ?? cause.message : undefined;
  return detail && !error.message.includes(detail) ? `${error.message} (${detail})` : error.message;
}

function isJson(contentType: string): boolean {
  const media = contentType.split(";")[0].trim().toLowerCase();
  return media === "application/json" || media.endsWith("+json");
}

function isText(contentType: string): boolean {
  const media = contentType.split(";")[0].trim().toLowerCase();
  return (
    media === "" ||
    media.startsWith("text/") ||
    media.endsWith("+xml") ||
    ["application/xml", "application/javascript", "application/x-www-form-urlencoded", "application/yaml", "application/x-ndjson"].includes(media)
  );
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}

/** Reads a 2xx answer into the stored result. */
async function toResult(response: Response): Promise<BackendOutcome> {
  const contentType = response.headers.get("content-type") ?? "";
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (isJson(contentType)) {
    const text = new TextDecoder().decode(bytes);
    try {
      return { ok: true, result: JSON.parse(text) as unknown, stored: text };
    } catch {
      return { ok: false, error: `the backend answered ${contentType} that is not valid JSON: ${text.slice(0, ERROR_SNIPPET)}` };
    }
  }
  const wrapped = isText(contentType)
    ? { content_type: contentType, body: new TextDecoder().decode(bytes) }
    : { content_type: contentType, body: base64(bytes), encoding: "base64" };
  return { ok: true, result: wrapped, stored: JSON.stringify(wrapped) };
}

export async function callBackend(deps: BackendDeps, job: JobRecord, service: ServiceConfig, signal: AbortSignal): Promise<BackendOutcome> {
  const targets = backendOrder(service);
  if (targets.length === 0) {
    return { ok: false, error: `model "${job.model}" has no backend address: set inference_url or backends in its service entry` };
  }
  const attempt = async (target: BackendTarget): Promise<Response> => {
    const input = await deps.objects.get(job.input_key).catch((error: unknown) => {
      throw new InputUnavailable(`the input file could not be read from the object store: ${describe(error)}`);
    });
    if (!input) throw new InputUnavailable(`the input file ${job.input_key} is missing from the object store`);
    const model = target.model || service.model;
    const boundary = `----gateway-${deps.newId()}`;
    const fields: Array<[string, string]> = model !== "" ? [["model", model]] : [];
    const { body, length } = multipartBody(boundary, fields, { filename: job.filename, contentType: job.content_type, size: job.size, body: input.body });
    // `duplex` is required to send a stream body; the DOM typings do not know it yet.
    const init: RequestInit & { duplex: "half" } = {
      method: "POST",
      // Node's fetch sends exactly this many bytes (and fails the call on a mismatch); Deno's
      // ignores it and sends chunked.
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(length) },
      body,
      signal,
      duplex: "half",
    };
    try {
      return await deps.fetch(backendUrl(target.url, job.path, model), init);
    } catch (error) {
      // "fetch failed" alone says nothing: keep the cause (ECONNREFUSED, a DNS error, ...).
      throw new Error(describe(error));
    }
  };
  const outcome = await withFailover(targets, attempt, signal);
  if (!outcome.response) {
    const reasons = outcome.failures.map((f) => `${f.target.url}: ${f.reason}`).join("; ");
    const error = `the backend request failed: ${reasons || describe(outcome.error)}`;
    return outcome.error instanceof InputUnavailable ? { ok: false, error } : { ok: false, error, transient: { reason: "network" } };
  }
  const response = outcome.response;
  if (response.status < 200 || response.status > 299) {
    const text = (await response.text().catch(() => "")).slice(0, ERROR_SNIPPET);
    const error = `the backend answered HTTP ${response.status}${text ? `: ${text}` : ""}`;
    if (!service.retry.on_statuses.includes(response.status)) return { ok: false, error };
    const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"), deps.now());
    return { ok: false, error, transient: { reason: String(response.status), ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) } };
  }
  return await toResult(response);
}
