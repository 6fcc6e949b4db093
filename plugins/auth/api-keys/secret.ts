/**
 * A key's secret: `gw-` and 32 random bytes in base64url (43 characters). The store keeps
 * only its HMAC-SHA-256 under `auth.api_key.secret` (a leaked store gives no usable key,
 * and without the server secret not even a way to test guesses) and a short prefix for
 * humans (`gw-…abcd`: its last four characters).
 */
const KEY_PATTERN = /^gw-[A-Za-z0-9_-]{43}$/;

export function isWellFormedKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function newKeySecret(): string {
  return `gw-${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
}

export function visiblePrefix(key: string): string {
  return `gw-…${key.slice(-4)}`;
}

export type KeyHasher = (key: string) => Promise<string>;

/** HMAC-SHA-256 of a key under the server secret, as hex (WebCrypto: the same on Node and Deno). */
export function keyHasher(secret: string): KeyHasher {
  const encoder = new TextEncoder();
  const cryptoKey = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return async function hashKey(key) {
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await cryptoKey, encoder.encode(key)));
    return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
  };
}
