/** The backends of the configured services as `GET /-/backends` and the health gauge show them. */
import type { BackendConfig, ServiceConfig } from "../../core/config/schema.ts";

export interface ConfiguredBackend {
  serviceType: string;
  /** The service's model alias. */
  model: string;
  /** The address as configured: the key of its health state. */
  url: string;
}

/** Each service's backends in configured order: `backends[]` (a backend without `url` at its provider's address), else `inference_url`, else the provider's default address. */
export function configuredBackends(
  services: readonly ServiceConfig[],
  defaultUrl: (provider: string) => string,
  addressOf: (service: ServiceConfig, backend: BackendConfig) => string = (_, backend) => backend.url,
): ConfiguredBackend[] {
  return services.flatMap((service) => {
    const urls = service.backends.length > 0
      ? service.backends.map((b) => addressOf(service, b))
      : [service.inference_url || (service.provider !== "" ? defaultUrl(service.provider) : "")];
    return urls.filter((url) => url !== "").map((url) => ({ serviceType: service.type, model: service.model, url }));
  });
}

/** The address without credentials, query or fragment (it is shown to whoever reads /-/backends). */
export function publicUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const path = parsed.pathname === "/" && !url.endsWith("/") ? "" : parsed.pathname;
    return `${parsed.protocol}//${parsed.host}${path}`;
  } catch {
    return url.replace(/[?#].*$/, "");
  }
}

/** The metric label of a backend: its `host:port`, the port spelled out. */
export function hostPort(url: string): string {
  try {
    const parsed = new URL(url);
    const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
    return `${parsed.hostname}:${port}`;
  } catch {
    return url;
  }
}
