/**
 * OAuth2 access tokens for Vertex AI, from google-auth-library, kept until shortly before they
 * expire (by the gateway's clock) and then fetched anew; concurrent requests share one fetch.
 *
 * Where the credentials come from, in google-auth-library's order: a service-account key file
 * (`keyFile`, or the parsed key as `credentials`), else Application Default Credentials: the
 * file named by `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's `application_default_credentials.json`,
 * then the metadata server of a Google Cloud machine (GCE, GKE, Cloud Run). The token is for
 * the `cloud-platform` scope.
 *
 * The library posts a service account's signed JWT to Google's token endpoint whatever the key
 * file says; here the request goes to the key file's `token_uri` when that names another one
 * (Google's key files name Google's, so nothing changes for them; a private or test endpoint works).
 *
 * The library is loaded on first use, so a gateway without Vertex AI OAuth never loads it.
 */
import type { GoogleAuth } from "google-auth-library";
import type { Clock } from "../../core/clock.ts";
import { isRecord, type JsonObject } from "../../core/llm/provider.ts";

export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** Google's token endpoint, where the library sends a service account's JWT. */
export const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";
/** A token is replaced this long before it expires (the library's own margin). */
export const REFRESH_MARGIN_MS = 5 * 60_000;

export interface GoogleTokenOptions {
  /** A service-account key file; absent: Application Default Credentials (see the top). */
  keyFile?: string;
  /** The key itself (the file's JSON), instead of `keyFile`. */
  credentials?: JsonObject;
  /**
   * The Google Cloud project the token is for. Without it the library looks for one on every
   * fetch (environment, files, the `gcloud` command, the metadata server), which takes seconds.
   */
  projectId?: string;
  /** The gateway's clock: when a cached token is due for replacement. */
  clock: Clock;
  refreshMarginMs?: number;
  /** The fetch the library's own requests go through (the token endpoint); default: the runtime's. */
  fetch?: typeof fetch;
}

interface CachedToken {
  token: string;
  /** On the gateway's clock. */
  expiresAtMs: number;
}

const urlOf = (input: Parameters<typeof fetch>[0]) => (typeof input === "string" ? input : input instanceof URL ? input.href : input.url);

export class GoogleAccessTokens {
  private cached: CachedToken | undefined;
  private pending: Promise<CachedToken> | undefined;

  constructor(private readonly options: GoogleTokenOptions) {}

  /**
   * A valid access token: the cached one, or a new one when it is missing or about to expire.
   * When the new one cannot be had, the cached one serves until it actually expires.
   */
  async token(): Promise<string> {
    const margin = this.options.refreshMarginMs ?? REFRESH_MARGIN_MS;
    const now = this.options.clock.now();
    if (this.cached && now < this.cached.expiresAtMs - margin) return this.cached.token;
    this.pending ??= this.fetchToken().finally(() => {
      this.pending = undefined;
    });
    try {
      this.cached = await this.pending;
    } catch (error) {
      if (this.cached && this.options.clock.now() < this.cached.expiresAtMs) return this.cached.token;
      throw error;
    }
    return this.cached.token;
  }

  /** The header a Vertex AI request carries. */
  async headers(): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.token()}` };
  }

  private async fetchToken(): Promise<CachedToken> {
    const library = await import("google-auth-library");
    const base = this.options.fetch ?? fetch;
    // deno-lint-ignore prefer-const -- read by the fetch callback below, which exists before it is assigned
    let auth: GoogleAuth | undefined;
    // The key file is read by the library before it asks for a token: its `token_uri` is known then.
    const fetchImplementation = (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
      const content: unknown = auth?.jsonContent;
      const tokenUri = isRecord(content) && typeof content.token_uri === "string" ? content.token_uri : undefined;
      return base(urlOf(input) === GOOGLE_TOKEN_URL && tokenUri !== undefined ? tokenUri : input, init);
    };
    // A new GoogleAuth each time: the library keeps its own token until it expires by the system
    // clock, and this cache decides by the gateway's.
    auth = new library.GoogleAuth({
      scopes: [CLOUD_PLATFORM_SCOPE],
      ...(this.options.projectId !== undefined ? { projectId: this.options.projectId } : {}),
      ...(this.options.keyFile !== undefined ? { keyFilename: this.options.keyFile } : {}),
      ...(this.options.credentials !== undefined ? { credentials: this.options.credentials } : {}),
      clientOptions: { transporterOptions: { fetchImplementation } },
    });
    try {
      const client = await auth.getClient();
      const { token } = await client.getAccessToken();
      if (typeof token !== "string" || token === "") throw new Error("the credentials gave no access token");
      // The library stamps the expiry on the system clock: kept as a lifetime, counted on the gateway's.
      const expiry = client.credentials.expiry_date;
      const lifetimeMs = typeof expiry === "number" ? Math.max(0, expiry - Date.now()) : 0;
      return { token, expiresAtMs: this.options.clock.now() + lifetimeMs };
    } catch (error) {
      throw new Error(`could not get a Google access token for Vertex AI: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
