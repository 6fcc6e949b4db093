/**
 * The core's identify step: the consumer, user type and priority signal from the headers
 * the config names (spec 5.1). An auth plugin adds a later identify step that replaces
 * the principal with a verified one.
 */
import type { GatewayConfig } from "../config/schema.ts";
import type { StageStep } from "./pipeline.ts";

export function headerIdentity(server: GatewayConfig["server"]): StageStep {
  const consumerHeader = server.consumer_header.toLowerCase();
  const userTypeHeader = server.user_type_header.toLowerCase();
  const priorityHeader = server.priority_header.toLowerCase();
  return function identifyFromHeaders(ctx) {
    const headers = ctx.request.headers;
    const consumer = consumerHeader ? headers.get(consumerHeader)?.trim() || undefined : undefined;
    const userType = userTypeHeader ? headers.get(userTypeHeader)?.trim() || undefined : undefined;
    if (consumer !== undefined || userType !== undefined) {
      ctx.principal = { ...ctx.principal, consumer, userType };
    }
    ctx.priority = priorityHeader !== "" && headers.has(priorityHeader);
  };
}

/**
 * What to tell a caller whose request needs their consumer when none was identified, in
 * the terms of the auth mode: `headerAdvice` (send the consumer header) unless oauth2,
 * where that header is ignored and the consumer comes from a token claim.
 */
export function missingConsumerMessage(config: GatewayConfig, headerAdvice: string): string {
  if (config.auth.mode !== "oauth2") return headerAdvice;
  const claim = config.auth.oauth2.claims.consumer;
  if (claim === "") return "bearer tokens name no consumer here: set auth.oauth2.claims.consumer to the token claim that names the consumer";
  return `send a bearer token whose ${claim} claim names the consumer`;
}
