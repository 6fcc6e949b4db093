/**
 * The client going away, as the core reads it to abort a backend call (backend-call.ts) or
 * stop a failover: the part of an AbortSignal it uses, so a request's own `signal` is one
 * (Deno, an embedded gateway). On Node the server adapter gives a lighter one
 * (adapters/node/client-gone.ts): @hono/node-server builds an AbortController for a request
 * once its `signal` is read, and every LLM miss read it.
 */
export interface ClientGone {
  /** Whether the client has gone away. */
  readonly aborted: boolean;
  /** Why, once it has. */
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}
