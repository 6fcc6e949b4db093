/** What one generated document is built from: the runtime's config, what the caller may see, and which routes exist. */
import type { GatewayConfig, ServiceConfig } from "../config/schema.ts";
import type { AuthMode } from "../pipeline/caller-auth.ts";
import type { Method, Parameter } from "./types.ts";

export interface DocInput {
  config: GatewayConfig;
  /** How callers are named (the auth plugin's `auth` service; "none" without it): the credentials documented. */
  authMode: AuthMode;
  /** The services the caller may see (hidden ones already left out), in config order. */
  visible: readonly ServiceConfig[];
  /** True when some plugin of this runtime serves `method` on the path template (`/jobs/{service_type}`). */
  served(method: Method, template: string): boolean;
  /** True when the sync proxy serves the configured operation paths. */
  syncProxy: boolean;
}

/** The configured identity headers as parameters (absent when the config names none). */
export function identityHeaders(config: GatewayConfig, options: { consumerRequired?: boolean; priority?: boolean } = {}): Parameter[] {
  const out: Parameter[] = [];
  const { consumer_header, user_type_header, priority_header } = config.server;
  if (consumer_header !== "") {
    out.push({
      name: consumer_header,
      in: "header",
      required: options.consumerRequired ?? false,
      description: "Consumer name (normally injected by the layer in front of the gateway)",
      schema: { type: "string" },
    });
  }
  if (user_type_header !== "") {
    out.push({ name: user_type_header, in: "header", description: "User type, selects rate limits and model visibility", schema: { type: "string" } });
  }
  if (options.priority && priority_header !== "") {
    out.push({ name: priority_header, in: "header", description: "Present: the request is a priority request", schema: { type: "string" } });
  }
  return out;
}

/**
 * The model that serves a request without `model` (registry rule: the only service, else
 * the `default: true` one), decided over every configured service, hidden ones included,
 * as the registry does; undefined when there is none or the caller may not see it.
 */
export function fallbackModel(all: readonly ServiceConfig[], visible: readonly ServiceConfig[]): string | undefined {
  const fallback = all.length === 1 ? all[0] : all.find((s) => s.default);
  return fallback && visible.includes(fallback) && fallback.model !== "" ? fallback.model : undefined;
}

/** Model aliases of `services` (services without one are left out). */
export function modelNames(services: readonly ServiceConfig[]): string[] {
  return services.map((s) => s.model).filter((m) => m !== "");
}

/** A string schema limited to `values`; unrestricted when there are none (an empty enum is invalid). */
export function oneOfStrings(values: readonly string[]): Record<string, unknown> {
  return values.length > 0 ? { type: "string", enum: [...values] } : { type: "string" };
}
