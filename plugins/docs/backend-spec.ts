/**
 * A model backend's own API document (`swagger_url`, fetched with `swagger_headers`),
 * served under /docs/spec/{type}/{model} and /swagger/{type}/{model}. Kept for a short
 * while per runtime so a docs page does not hit the backend on every load; a failure is
 * not kept, so the next request retries.
 */
import { parse } from "yaml";
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
/** A spec larger than this is refused rather than held in memory. */
const MAX_BYTES = 10 * 1024 * 1024;

export interface BackendSpecOptions {
  fetch: typeof fetch;
  now: () => number;
  ttlMs: number;
  timeoutMs: number;
}

type Spec = Record<string, unknown>;

const isObject = (value: unknown): value is Spec => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * docs/design.md#versioning: the per-model document of a deprecated model marks every operation
 * deprecated.
 */
export function markDeprecated(spec: Spec): void {
  if (!isObject(spec.paths)) return;
  for (const item of Object.values(spec.paths)) {
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const operation = item[method];
      if (isObject(operation)) operation.deprecated = true;
    }
  }
}

/**
 * Callers reach the backend through the gateway at the same paths, so the document's
 * servers become the gateway itself; that also keeps internal backend addresses private.
 */
function pointAtGateway(spec: Spec): void {
  if (typeof spec.openapi === "string") spec.servers = [{ url: "/", description: "Through the gateway" }];
  if (typeof spec.swagger === "string") {
    delete spec.host;
    delete spec.schemes;
  }
}

async function readCapped(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BYTES) {
      await reader.cancel().catch(() => {});
      throw new Error(`larger than ${MAX_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(all);
}

async function download(service: ServiceConfig, options: BackendSpecOptions): Promise<Spec> {
  let response: Response;
  try {
    response = await options.fetch(service.swagger_url, {
      headers: { accept: "application/json, application/yaml;q=0.9, */*;q=0.5", ...service.swagger_headers },
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (error) {
    throw errors.badGateway(`the API document of model "${service.model}" could not be fetched: ${(error as Error).message}`);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw errors.badGateway(`the API document of model "${service.model}" could not be fetched: the backend answered HTTP ${response.status}`);
  }
  let spec: unknown;
  try {
    // YAML is a superset of JSON, so one parser reads either format.
    spec = parse(await readCapped(response));
  } catch (error) {
    throw errors.badGateway(`the API document of model "${service.model}" is not valid JSON or YAML: ${(error as Error).message}`);
  }
  if (!isObject(spec) || (typeof spec.openapi !== "string" && typeof spec.swagger !== "string")) {
    throw errors.badGateway(`the API document of model "${service.model}" is not an OpenAPI or Swagger document`);
  }
  return spec;
}

export class BackendSpecs {
  private readonly cache = new Map<ServiceConfig, { until: number; body: Promise<string> }>();

  constructor(private readonly options: BackendSpecOptions) {}

  /** The document as JSON text; rejects with a 502 `GatewayError` when the backend fails. */
  get(service: ServiceConfig): Promise<string> {
    const now = this.options.now();
    const cached = this.cache.get(service);
    if (cached && cached.until > now) return cached.body;
    // Concurrent requests share one download; a failure is dropped from the cache at once.
    const body = download(service, this.options).then((spec) => {
      if (service.deprecated) markDeprecated(spec);
      pointAtGateway(spec);
      return JSON.stringify(spec);
    });
    this.cache.set(service, { until: now + this.options.ttlMs, body });
    body.catch(() => {
      if (this.cache.get(service)?.body === body) this.cache.delete(service);
    });
    return body;
  }
}
