/**
 * Bedrock errors -> chat-completions error bodies (`{"error":{"message","type","code"}}`).
 *
 * Bedrock names the error in the `x-amzn-ErrorType` header (`ThrottlingException:http://...`),
 * some front ends in the body's `__type` (`com.amazon.coral.service#UnrecognizedClientException`),
 * and says what happened in `message` (`Message` on a few). The status is kept; `type` is the
 * chat-completions type clients branch on, `code` the Bedrock error name (or
 * `context_length_exceeded`, OpenAI's code, when the prompt is too long for the model).
 *
 * | Bedrock error (status)                                       | `type`                 |
 * |--------------------------------------------------------------|------------------------|
 * | ThrottlingException (429), ServiceQuotaExceededException (400) | rate_limit_error     |
 * | ValidationException (400), ConflictException (400)           | invalid_request_error  |
 * | AccessDeniedException (403)                                  | permission_error       |
 * | UnrecognizedClientException, InvalidSignatureException, ExpiredTokenException, MissingAuthenticationTokenException (403), IncompleteSignature (400) | authentication_error |
 * | ResourceNotFoundException (404)                              | not_found_error        |
 * | ModelNotReadyException (429), ModelTimeoutException (408), ModelErrorException (424), ModelStreamErrorException (424), InternalServerException (500), ServiceUnavailableException (503) | backend_error |
 * | anything else                                                | by status              |
 */
import { chatError, errorTypeFor, isRecord, type JsonObject } from "../../core/llm/provider.ts";
import { saysContextWindowExceeded } from "./context-window.ts";

const TYPES: Record<string, string> = {
  ThrottlingException: "rate_limit_error",
  ServiceQuotaExceededException: "rate_limit_error",
  ValidationException: "invalid_request_error",
  ConflictException: "invalid_request_error",
  AccessDeniedException: "permission_error",
  UnrecognizedClientException: "authentication_error",
  InvalidSignatureException: "authentication_error",
  IncompleteSignature: "authentication_error",
  IncompleteSignatureException: "authentication_error",
  ExpiredTokenException: "authentication_error",
  MissingAuthenticationTokenException: "authentication_error",
  ResourceNotFoundException: "not_found_error",
  ModelNotReadyException: "backend_error",
  ModelTimeoutException: "backend_error",
  ModelErrorException: "backend_error",
  ModelStreamErrorException: "backend_error",
  InternalServerException: "backend_error",
  ServiceUnavailableException: "backend_error",
};

/** `ThrottlingException:http://internal...` or `com.amazon...#ThrottlingException` -> `ThrottlingException` (as the SDKs read it). */
export function errorName(raw: string): string {
  const beforeColon = raw.split(":")[0];
  const afterHash = beforeColon.split("#");
  return afterHash[afterHash.length - 1].trim();
}

/** Headers of the answer, as a `Headers` or a plain record; the error type is case-insensitive. */
export type ErrorHeaders = Headers | Readonly<Record<string, string>>;

function headerValue(headers: ErrorHeaders | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const found = Object.keys(headers).find((key) => key.toLowerCase() === name);
  return found === undefined ? undefined : headers[found];
}

/** The Bedrock error name: the header first, then the body's `__type` or `code`; "" when none says. */
export function bedrockErrorName(body: unknown, headers?: ErrorHeaders): string {
  const header = headerValue(headers, "x-amzn-errortype");
  if (header) return errorName(header);
  if (isRecord(body)) {
    if (typeof body.__type === "string") return errorName(body.__type);
    if (typeof body.code === "string") return errorName(body.code);
  }
  return "";
}

function messageOf(body: unknown, status: number): string {
  if (isRecord(body)) {
    if (typeof body.message === "string" && body.message !== "") return body.message;
    if (typeof body.Message === "string" && body.Message !== "") return body.Message;
  }
  if (typeof body === "string" && body.trim() !== "") return body.trim();
  return `the backend answered HTTP ${status}`;
}

/** The chat error body for a Bedrock error named `name` (maybe "") with `message`. */
export function chatErrorFor(status: number, name: string, message: string): JsonObject {
  const contextWindow = (name === "ValidationException" || name === "") && status === 400 && saysContextWindowExceeded(message);
  const type = TYPES[name] ?? errorTypeFor(status);
  const body = chatError(name === "" ? message : `${message} (Bedrock ${name})`, type);
  const code = contextWindow ? "context_length_exceeded" : name;
  if (code !== "" && isRecord(body.error)) body.error.code = code;
  return body;
}

/** A non-2xx Bedrock answer to a chat-completions error body; `headers` tell the error name when given. */
export function converseToChatError(status: number, body: unknown, headers?: ErrorHeaders): JsonObject {
  return chatErrorFor(status, bedrockErrorName(body, headers), messageOf(body, status));
}
