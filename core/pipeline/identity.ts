/**
 * The core's identify step: the consumer, user type and priority signal from the headers
 * the config names (spec 5.1). An auth plugin adds a later identify step that replaces
 * the principal with a verified one.
 *
 * A header that is sent counts as sent, whatever its value: a blank consumer or user type
 * is refused (400), never read as an absent header, since an absent consumer header is the
 * admin/internal bypass of job ownership (spec 5.2) and a blank one names nobody. An
 * identity header sent twice is refused too (`repeatedIdentityHeader`).
 */
import type { GatewayConfig } from "../config/schema.ts";
import { errors, type GatewayError } from "../errors.ts";
import type { StageStep } from "./pipeline.ts";
import { existingSlotOf } from "./request-slot.ts";

/**
 * The `auth.mode` the auth plugin's section sets: how the caller is named decides which
 * identity headers count. A gateway built without that plugin has no such section: "none".
 */
function authMode(config: GatewayConfig): string {
  return config.auth?.mode ?? "none";
}

/** oauth2 and api_key: a credential alone names the caller, and the identity headers a client sends are ignored. */
function credentialNamesCaller(config: GatewayConfig): boolean {
  const mode = authMode(config);
  return mode === "oauth2" || mode === "api_key";
}

export function headerIdentity(config: GatewayConfig): StageStep {
  const { consumer_header: consumerHeader, user_type_header: userTypeHeader, priority_header: priorityHeader } = config.server;
  // With oauth2 or api_key the credential alone names the caller: these two headers are not checked (a later step ignores them).
  const checked = !credentialNamesCaller(config);
  const checks: Array<[header: string, names: string | undefined]> = [
    [checked ? consumerHeader : "", "a consumer name"],
    [checked ? userTypeHeader : "", "a user type"],
    // Blank is fine here: the priority header marks a request by being there (spec 4.1).
    [priorityHeader, undefined],
  ];
  const headers = checks.filter(([header]) => header !== "");
  return function identifyFromHeaders(ctx) {
    const request = ctx.request;
    for (const [header, names] of headers) {
      const refused = repeatedIdentityHeader(request, header) ?? (names !== undefined ? blankIdentityHeader(request, header, names) : undefined);
      if (refused) return refused.toResponse();
    }
    const consumer = read(request.headers, consumerHeader);
    const userType = read(request.headers, userTypeHeader);
    if (consumer !== undefined || userType !== undefined) {
      ctx.principal = { ...ctx.principal, consumer, userType };
    }
    ctx.priority = priorityHeader !== "" && request.headers.has(priorityHeader);
  };
}

/**
 * `value` without the optional whitespace around it: spaces and tabs only (RFC 9110 5.6.3).
 * `String.prototype.trim` also strips a non-breaking space and other Unicode spaces, which are
 * part of the value: `alice\u00a0` is not the consumer `alice`.
 */
function trimOws(value: string): string {
  return value.replace(/^[ \t]+|[ \t]+$/g, "");
}

function read(headers: Headers, header: string): string | undefined {
  if (header === "") return undefined;
  const value = headers.get(header);
  return value === null ? undefined : trimOws(value) || undefined;
}

/**
 * A 400 for an identity header sent more than once (any letter case). `Headers.get` joins
 * repeats with ", ", so `X-Roles: user` and a second `x-roles: admin` (say, a client's copy
 * that a proxy in front appended to instead of replacing) would read as both roles. The
 * server adapter counts repeats in the raw request; without its count nothing is refused.
 */
export function repeatedIdentityHeader(request: Request, header: string): GatewayError | undefined {
  const times = existingSlotOf(request)?.timesSent?.(header.toLowerCase()) ?? 1;
  if (times <= 1) return undefined;
  return errors.badRequest(
    `the ${header} header was sent ${times} times; send it once (a proxy in front of the gateway must replace the client's ${header} header, not add another)`,
  );
}

/** A 400 for a single-value identity header sent with nothing but blanks in it. */
function blankIdentityHeader(request: Request, header: string, names: string): GatewayError | undefined {
  const value = request.headers.get(header);
  if (value === null || trimOws(value) !== "") return undefined;
  return errors.badRequest(`the ${header} header is empty: send ${names} or leave the header out`);
}

/**
 * The request carries the consumer header with a blank value, and the auth mode reads that
 * header. Such a caller owns no job: a job lookup answers 404 as for another consumer's job.
 */
export function sentBlankConsumer(config: GatewayConfig, request: Request): boolean {
  const header = config.server.consumer_header;
  if (header === "" || credentialNamesCaller(config)) return false;
  const value = request.headers.get(header);
  return value !== null && trimOws(value) === "";
}

/**
 * What to tell a caller whose request needs their consumer when none was identified, in
 * the terms of the auth mode: `headerAdvice` (send the consumer header) unless oauth2 or
 * api_key, where that header is ignored and the consumer comes from the credential.
 */
export function missingConsumerMessage(config: GatewayConfig, headerAdvice: string): string {
  // Every key names a consumer, so this is only reached on a request that needed no key.
  if (authMode(config) === "api_key") return "send a gateway API key (Authorization: Bearer <key> or x-api-key: <key>)";
  if (authMode(config) !== "oauth2") return headerAdvice;
  const claim = config.auth.oauth2.claims.consumer;
  if (claim === "") return "bearer tokens name no consumer here: set auth.oauth2.claims.consumer to the token claim that names the consumer";
  return `send a bearer token whose ${claim} claim names the consumer`;
}
