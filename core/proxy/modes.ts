/**
 * How a resolved sync request (`POST /v1/*` and other configured paths) is served. The
 * sync-proxy plugin owns the route, reads the body and resolves the model; then the first
 * registered mode that accepts the service handles it, else the direct proxy does.
 * The LLM proxy is such a mode (services with `provider` set and a JSON body).
 */
import type { ServiceConfig } from "../config/schema.ts";
import type { RequestContext, RequestMode } from "../pipeline/context.ts";

/** The request body as the sync route read it. */
export type SyncBody =
  /**
   * A JSON body, read whole (capped at `server.max_body_mb`) because `model` is needed.
   * `retyped`: it came without a JSON content type (none, text/plain, form-urlencoded) on a
   * path LLM services serve, and is forwarded as `application/json`. `escapeFree`, `keys`: what
   * the client's JSON held (`ParsedJson`), for a body that is the client's.
   */
  | { kind: "json"; value: Record<string, unknown>; bytes: Uint8Array; retyped?: boolean; escapeFree?: boolean; keys?: number }
  /** Any other body, still unread: streamed to the backend as it arrives. */
  | { kind: "stream"; stream: ReadableStream<Uint8Array> | null; contentType: string }
  /** A body read whole to see whether it is JSON (see `retyped`) that is not: forwarded as it was. */
  | { kind: "read"; bytes: Uint8Array; contentType: string };

declare module "../pipeline/context.ts" {
  interface RequestVars {
    /** The sync request body as the sync route read it (set by its resolve step): later stages read it from here. */
    syncBody: SyncBody;
  }
}

export interface SyncMode {
  /** The request mode this handler serves (metrics label). */
  mode: RequestMode;
  accepts(service: ServiceConfig, body: SyncBody): boolean;
  /**
   * Called once the mode is picked, before `prepare`: throws a GatewayError (400) for a body
   * the mode cannot take, so nothing is looked up, counted or sent for it.
   */
  check?(ctx: RequestContext, body: SyncBody): void;
  /**
   * Called once the model is resolved, before visibility, policy and limits: starts read-only
   * work `handle` will need, so it overlaps the limit checks' store round trip (the LLM mode's
   * cache read). It must not answer, count or change anything: the request may still be refused.
   */
  prepare?(ctx: RequestContext, body: SyncBody): void;
  handle(ctx: RequestContext, body: SyncBody): Promise<Response>;
}

/** The `syncModes` service: where a plugin registers a mode; the first registered mode that accepts a request serves it. */
export interface SyncModes {
  /** Throws when this mode is registered already. */
  register(mode: SyncMode): void;
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `sync-proxy` plugin. */
    syncModes: SyncModes;
  }
}
