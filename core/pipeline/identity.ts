/**
 * The core's identify step: the consumer, user type and priority signal from the headers
 * the config names (docs/design.md#authentication). An auth plugin adds a later identify step that
 * replaces the principal with a verified one.
 *
 * A header that is sent counts as sent, whatever its value: a blank consumer or user type
 * is refused (400), never read as an absent header, since an absent consumer header is the
 * admin/internal bypass of job ownership (docs/design.md#consumers-and-ownership) and a blank one
 * names nobody. An identity header sent twice is refused too (`repeatedIdentityHeader`).
 */
import type { GatewayConfig } from "../config/schema.ts";
import { errors, type GatewayError } from "../errors.ts";
import type { CallerAuth } from "./caller-auth.ts";
import type { StageStep } from "./pipeline.ts";
import { existingSlotOf } from "./request-slot.ts";

/**
 * oauth2 and api_key: a credential alone names the caller, and the identity headers a client
 * sends are ignored. How callers are named is the auth plugin's to say (its `auth` service);
 * without it, the headers name them.
 */
function credentialNamesCaller(auth: CallerAuth | undefined): boolean {
  return auth?.credentialNamesCaller === true;
}

/** `auth`: the auth plugin's service, asked per request (it is provided once the plugins are set up). */
export function headerIdentity(config: GatewayConfig, auth: () => CallerAuth | undefined = () => undefined): StageStep {
  const { consumer_header: consumerHeader, user_type_header: userTypeHeader, priority_header: priorityHeader } = config.server;
  const checks: Array<[header: string, names: string | undefined]> = [
    [consumerHeader, "a consumer name"],
    [userTypeHeader, "a user type"],
    // Blank is fine here: the priority header marks a request by being there
    // (docs/design.md#job-submission).
    [priorityHeader, undefined],
  ];
  const headers = checks.filter(([header]) => header !== "");
  // With oauth2 or api_key the credential alone names the caller: the two headers naming it are not checked (a later step ignores them).
  const credentialOnly = headers.filter(([, names]) => names === undefined);
  return function identifyFromHeaders(ctx) {
    const request = ctx.request;
    for (const [header, names] of credentialNamesCaller(auth()) ? credentialOnly : headers) {
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
 * header (`auth`: the auth plugin's service, absent without it). Such a caller owns no job: a
 * job lookup answers 404 as for another consumer's job.
 */
export function sentBlankConsumer(config: GatewayConfig, request: Request, auth: CallerAuth | undefined): boolean {
  const header = config.server.consumer_header;
  if (header === "" || credentialNamesCaller(auth)) return false;
  const value = request.headers.get(header);
  return value !== null && trimOws(value) === "";
}
