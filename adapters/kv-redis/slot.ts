/**
 * The Redis Cluster hash slot of a key (CRC16/XMODEM of the key, or of its `{tag}` when it
 * has a non-empty one, modulo 16384), as https://redis.io/docs/reference/cluster-spec/ defines it.
 * The cluster adapter uses it to pick a primary's reply bound; tests, to check that the keys
 * of every atomic operation share a slot.
 */

const TABLE = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let crc = i << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  TABLE[i] = crc;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}

const encoder = new TextEncoder();

export function keySlot(key: string): number {
  let hashed = key;
  const open = key.indexOf("{");
  if (open >= 0) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) hashed = key.slice(open + 1, close);
  }
  return crc16(encoder.encode(hashed)) % 16384;
}
