/**
 * The `admin` service: what the admin plugin tells other plugins about the admin token, which
 * guards every `/-/*` endpoint (and `/metrics` when asked). A plugin that registers an admin
 * route or hands out credentials reads it through `api.use("admin")` with "admin" in its
 * `optionalDependsOn`.
 */

export interface AdminAccess {
  /** Whether `admin.token` is set: endpoints that hand out credentials refuse to run open. */
  readonly tokenConfigured: boolean;
  /**
   * Lets `GET <path>` (exactly that path) through without the token: for what holds no data,
   * such as the console's page and scripts, which a browser loads before anyone can type a
   * token. Declared by the plugin that owns the route, so the exemption is visible there.
   */
  allowWithoutToken(path: string): void;
  /** The paths let through, for tests that walk the route table. */
  readonly openPaths: ReadonlySet<string>;
  /** Whether a request carries the admin token (always, when none is configured). */
  accepts(headers: Headers): boolean;
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `admin` plugin. */
    admin: AdminAccess;
  }
}
