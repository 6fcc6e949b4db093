/**
 * Every error a caller can see, in one place: a code, its HTTP status, the `type` of the
 * error body and a message saying what to fix. Body shape for every status:
 * `{"error":{"message":"...","type":"..."}}`.
 */

export type ErrorType =
  | "invalid_request_error"
  | "not_found_error"
  | "authentication_error"
  | "permission_error"
  | "conflict_error"
  | "gone_error"
  | "request_too_large"
  | "rate_limit_error"
  | "not_implemented_error"
  | "overloaded_error"
  | "backend_error"
  | "timeout_error"
  | "store_error"
  | "config_error"
  | "api_error";

export interface ErrorBody {
  error: { message: string; type: ErrorType; code?: string };
}

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "GatewayError";
  }

  toResponse(): Response {
    return errorResponse(this.status, this.type, this.message, this.headers);
  }
}

export function errorResponse(status: number, type: ErrorType, message: string, headers: Record<string, string> = {}): Response {
  const body: ErrorBody = { error: { message, type } };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** Constructors for the errors the gateway answers with; name them by situation, not status. */
export const errors = {
  badRequest: (message: string) => new GatewayError(400, "invalid_request_error", message),
  notFound: (message: string) => new GatewayError(404, "not_found_error", message),
  /** A path nothing serves (for this caller: a path whose every model is hidden from them reads the same). */
  noRoute: (method: string, path: string) => new GatewayError(404, "not_found_error", `no route for ${method} ${path}`),
  unauthorized: (message: string, challenge = "Bearer") =>
    new GatewayError(401, "authentication_error", message, { "www-authenticate": challenge }),
  forbidden: (message: string) => new GatewayError(403, "permission_error", message),
  conflict: (message: string) => new GatewayError(409, "conflict_error", message),
  tooLarge: (message: string) => new GatewayError(413, "request_too_large", message),
  rateLimited: (message: string, retryAfterSeconds: number, headers: Record<string, string> = {}) =>
    new GatewayError(429, "rate_limit_error", message, { "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))), ...headers }),
  notImplemented: (message: string) => new GatewayError(501, "not_implemented_error", message),
  overloaded: (message: string) => new GatewayError(503, "overloaded_error", message),
  storeUnavailable: (message: string) => new GatewayError(503, "store_error", message),
  badGateway: (message: string) => new GatewayError(502, "backend_error", message),
  gatewayTimeout: (message: string) => new GatewayError(504, "timeout_error", message),
  internal: (message: string) => new GatewayError(500, "api_error", message),
};

/** Any thrown value as a response; unknown errors become a 500 without leaking internals. */
export function toErrorResponse(error: unknown): Response {
  if (error instanceof GatewayError) return error.toResponse();
  // A user plugin loaded through a TypeScript loader may carry its own copy of this module.
  const like = error as Partial<GatewayError> | null;
  if (like && like.name === "GatewayError" && typeof like.status === "number" && typeof like.type === "string") {
    return errorResponse(like.status, like.type, String(like.message), like.headers ?? {});
  }
  return errorResponse(500, "api_error", "internal error; see the gateway log for details");
}
