/**
 * The `X-Svc-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
 * Signed with Web Crypto so the same code runs on Node and Deno. `t` is taken per attempt,
 * so a receiver can reject stale or replayed deliveries by their age.
 */

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  // One imported key per secret (there is one secret per config; a reload may bring a new one).
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    keys.clear();
    keys.set(secret, key);
  }
  return key;
}

function toHex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The header value for `body` signed at `unixSeconds`. */
export async function signatureHeader(secret: string, unixSeconds: number, body: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(`${unixSeconds}.${body}`));
  return `t=${unixSeconds},v1=${toHex(mac)}`;
}
