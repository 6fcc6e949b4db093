/**
 * Stored responses encrypted at rest with the store's key (`object_store.encryption.key`,
 * docs/deployment.md): AES-256-GCM under a key derived for this use alone (HKDF-SHA-256), a
 * random 12-byte nonce per value, stored as `v1:` + base64(nonce || ciphertext+tag). Without a
 * key, values are stored as they are. WebCrypto, so the same code runs on Node and Deno.
 */
const PREFIX = "v1:";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

function unbase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function hexBytes(hex: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(hex.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

export interface Sealer {
  seal(text: string): Promise<string>;
  /** Throws when the value was changed or sealed under another key. */
  open(stored: string): Promise<string>;
}

/** The sealer for `hexKey` (64 hex characters), or one that stores values as they are when it is empty. */
export function sealerFor(hexKey: string): Sealer {
  if (hexKey === "") return { seal: (text) => Promise.resolve(text), open: (stored) => Promise.resolve(stored) };
  let key: Promise<CryptoKey> | undefined;
  const derived = () =>
    key ??= crypto.subtle.importKey("raw", hexBytes(hexKey), "HKDF", false, ["deriveKey"]).then((base) =>
      crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode("inference-gateway stored responses v1") },
        base,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      )
    );
  return {
    async seal(text) {
      const nonce = crypto.getRandomValues(new Uint8Array(12));
      const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, await derived(), encoder.encode(text)));
      const out = new Uint8Array(nonce.length + sealed.length);
      out.set(nonce);
      out.set(sealed, nonce.length);
      return PREFIX + base64(out);
    },
    async open(stored) {
      if (!stored.startsWith(PREFIX)) throw new Error("a stored response is not encrypted although object_store.encryption.key is set");
      const bytes = unbase64(stored.slice(PREFIX.length));
      const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.subarray(0, 12) }, await derived(), bytes.subarray(12));
      return decoder.decode(plain);
    },
  };
}
