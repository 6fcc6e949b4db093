/**
 * The per-request context that travels through the pipeline. Plugins add their own typed
 * fields by declaration merging on `RequestVars`:
 *
 *   declare module "../../core/pipeline/context.ts" {
 *     interface RequestVars { semaphoreKey: string }
 *   }
 */
import type { ServiceConfig } from "../config/schema.ts";
import type { CredentialLimits } from "../limits/windows.ts";
import type { ClientGone } from "../proxy/client-gone.ts";
import type { StageName } from "./pipeline.ts";

/** How the request is served: decides which stage steps apply. */
export type RequestMode = "sync" | "llm" | "async";

/**
 * Who sent the request: a client of the gateway, or the gateway itself on someone's behalf
 * (a batch line, run for the batch's owner; see `PluginApi.dispatchAs`).
 */
export type RequestOrigin = "client" | "batch";

/** Who is calling, resolved once per request in the `identify` stage. */
export interface Principal {
  /** From `server.consumer_header` or the auth mode; absent = anonymous (limits bypassed). */
  consumer?: string;
  userType?: string;
  groups: readonly string[];
  roles: readonly string[];
  scopes: readonly string[];
  /** True when an auth mode vouched for this identity. */
  authenticated: boolean;
  /** Limits the credential itself carries (an API key's), enforced by the limits plugin. */
  limits?: CredentialLimits;
  /** The id of the API key the caller came with (auth.mode api_key), for usage by key. */
  keyId?: string;
}

// deno-lint-ignore no-empty-interface
export interface RequestVars {}

export interface RequestContext {
  readonly request: Request;
  readonly url: URL;
  mode: RequestMode;
  /** Known up front for /jobs/{type}; set by resolve for sync requests. */
  serviceType: string;
  /** The resolved service (model); set by the resolve step. */
  service?: ServiceConfig;
  principal: Principal;
  /** The request carried `server.priority_header`. */
  priority: boolean;
  /**
   * "client" for a request from outside; otherwise the gateway sent it itself as `principal`
   * (`PluginApi.dispatchAs`): the identify stage did not run, and steps that treat such
   * requests differently (a batch line is not held to the request rate) read it here.
   */
  readonly origin: RequestOrigin;
  /** The stage the request is in; once answered, the stage whose step (or mode) answered it. */
  readonly stage: StageName;
  /** Clock time the request entered the gateway (ms). */
  readonly startedAt: number;
  /** Headers every response to this request carries (limit headers, for example). */
  readonly responseHeaders: Headers;
  /** Plugin-owned per-request values. */
  readonly vars: Partial<RequestVars>;
  /**
   * Client headers the gateway rewrites on every backend request (lower-case names): a
   * string replaces the client's value, null removes it. Set by an auth mode that verified
   * the caller (oauth2): the bearer token is removed and the identity headers carry the
   * verified identity, so a backend never sees identity the client made up.
   */
  backendHeaders?: Readonly<Record<string, string | null>>;
  /**
   * How a refused request ended, set by the plugin that refused it when the refusal is worth
   * counting apart from other errors: the error type of the refusal. A request with an outcome
   * was not served, even when its status was 2xx (a stream refused after its 200 went out).
   * Usage records count requests per outcome (docs/usage.md#refused-requests).
   */
  outcome?: string;
  /**
   * The client going away (core/proxy/client-gone.ts): the server adapter's when it gives one
   * (Node), else the request's own `signal`.
   */
  readonly clientGone: ClientGone;
  /**
   * The server adapter writes the chunks of an own-body Response itself (Node's: see
   * core/proxy/own-body-response.ts): a stream the gateway makes may then be one.
   */
  readonly ownBodies: boolean;
  /** Runs `fn` when the response is finished (body fully sent or aborted) or the request failed. */
  defer(fn: () => void | Promise<void>): void;
  /**
   * Runs `fn` (awaited, once) before the client can have its whole answer: before the
   * Response is handed over when its body is in memory, else before the last byte of the
   * body goes out; or when the answer is abandoned (the client went away, the body failed).
   * For what a client may rely on once it has read its answer: a freed concurrency slot,
   * counted usage. `fn` gets the answer's status. Steps of one request run concurrently.
   */
  beforeEnd(fn: EndStep): void;
}

/** Work that must be done before the client has its whole answer; gets the answer's status. */
export type EndStep = (status: number) => void | Promise<void>;

export const anonymous: Principal = Object.freeze({
  groups: [],
  roles: [],
  scopes: [],
  authenticated: false,
});

/** The pipeline's concrete context; `finalizers` are run by the pipeline when the response ends. */
export class RequestState implements RequestContext {
  service?: ServiceConfig;
  principal: Principal = anonymous;
  priority = false;
  origin: RequestOrigin = "client";
  stage: StageName = "identify";
  readonly vars: Partial<RequestVars> = {};
  backendHeaders?: Readonly<Record<string, string | null>>;
  outcome?: string;
  readonly finalizers: Array<() => void | Promise<void>> = [];
  /** The `beforeEnd` steps, built on first use (most requests have none). */
  endSteps?: EndStep[];
  ownBodies = false;
  // Built on first use: most requests never need them (per-request cost on the hot path).
  #url?: URL;
  #responseHeaders?: Headers;

  constructor(
    readonly request: Request,
    public mode: RequestMode,
    public serviceType: string,
    readonly startedAt: number,
    /**
     * Settles once the response has been sent or the client went away, when the server
     * adapter can tell (see `Gateway.fetch`); finalizers then wait for it instead of the
     * pipeline wrapping the response body to find its end.
     */
    readonly responded?: PromiseLike<unknown>,
    /** The server adapter's notice of the client going away (see `clientGone`). */
    private readonly clientGoneNotice?: ClientGone,
  ) {}

  get clientGone(): ClientGone {
    return this.clientGoneNotice ?? this.request.signal;
  }

  get url(): URL {
    this.#url ??= new URL(this.request.url);
    return this.#url;
  }

  get responseHeaders(): Headers {
    this.#responseHeaders ??= new Headers();
    return this.#responseHeaders;
  }

  /** Whether any step added a response header (without building the Headers to find out). */
  get hasResponseHeaders(): boolean {
    return this.#responseHeaders !== undefined && !this.#responseHeaders.keys().next().done;
  }

  defer(fn: () => void | Promise<void>): void {
    this.finalizers.push(fn);
  }

  beforeEnd(fn: EndStep): void {
    (this.endSteps ??= []).push(fn);
  }
}
