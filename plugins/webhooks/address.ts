/**
 * Classifies an IP address as a webhook target: public, private (loopback and private
 * ranges, allowed only with `webhooks.allow_private_networks`) or forbidden (link-local,
 * cloud metadata and non-unicast addresses, never allowed). IPv6 forms that embed an IPv4
 * address (mapped, compatible, NAT64, 6to4) are judged by the IPv4 address they reach, so
 * `::ffff:127.0.0.1` is loopback, not "some IPv6 address".
 */

export type AddressClass =
  | { kind: "public" }
  | { kind: "private"; reason: string }
  | { kind: "forbidden"; reason: string };

type Rule = { kind: "private" | "forbidden"; reason: string };

/** IPv4 ranges as [first octets prefix, prefix length, rule]; the most specific range must come first. */
const IPV4_RULES: Array<[string, number, Rule]> = [
  ["169.254.169.254", 32, { kind: "forbidden", reason: "a cloud metadata address" }],
  // Alibaba Cloud's metadata service sits inside the CGNAT range, so it precedes 100.64/10.
  ["100.100.100.200", 32, { kind: "forbidden", reason: "a cloud metadata address" }],
  ["169.254.0.0", 16, { kind: "forbidden", reason: "a link-local address" }],
  ["224.0.0.0", 4, { kind: "forbidden", reason: "a multicast address" }],
  ["240.0.0.0", 4, { kind: "forbidden", reason: "a reserved or broadcast address" }],
  ["0.0.0.0", 8, { kind: "private", reason: "an unspecified address (reaches this host)" }],
  ["127.0.0.0", 8, { kind: "private", reason: "a loopback address" }],
  ["10.0.0.0", 8, { kind: "private", reason: "a private address" }],
  ["172.16.0.0", 12, { kind: "private", reason: "a private address" }],
  ["192.168.0.0", 16, { kind: "private", reason: "a private address" }],
  ["100.64.0.0", 10, { kind: "private", reason: "a shared (CGNAT) address" }],
  ["198.18.0.0", 15, { kind: "private", reason: "a benchmarking-network address" }],
];

/** IPv6 ranges (addresses that embed an IPv4 address are handled before these). */
const IPV6_RULES: Array<[string, number, Rule]> = [
  ["fd00:ec2::254", 128, { kind: "forbidden", reason: "a cloud metadata address" }],
  ["::1", 128, { kind: "private", reason: "a loopback address" }],
  ["::", 128, { kind: "private", reason: "an unspecified address (reaches this host)" }],
  ["fe80::", 10, { kind: "forbidden", reason: "a link-local address" }],
  ["ff00::", 8, { kind: "forbidden", reason: "a multicast address" }],
  ["fc00::", 7, { kind: "private", reason: "a unique-local (private) address" }],
  ["fec0::", 10, { kind: "private", reason: "a site-local (private) address" }],
];

/** The four octets of a dotted-quad IPv4 address, or null. */
export function parseIPv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const octets: number[] = [];
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return null;
    const value = Number(part);
    if (value > 255) return null;
    octets.push(value);
  }
  return octets;
}

/** The eight 16-bit groups of an IPv6 address (zone index ignored), or null. */
export function parseIPv6(text: string): number[] | null {
  let rest = text;
  const zone = rest.indexOf("%");
  if (zone >= 0) rest = rest.slice(0, zone);
  if (!rest.includes(":")) return null;
  // A trailing dotted quad stands for the last two groups: rewrite it as two hex groups.
  const lastColon = rest.lastIndexOf(":");
  const last = rest.slice(lastColon + 1);
  if (last.includes(".")) {
    const v4 = parseIPv4(last);
    if (!v4) return null;
    rest = `${rest.slice(0, lastColon + 1)}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const halves = rest.split("::");
  if (halves.length > 2) return null;
  const parseGroups = (part: string): number[] | null => {
    if (part === "") return [];
    const groups: number[] = [];
    for (const group of part.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return null;
      groups.push(parseInt(group, 16));
    }
    return groups;
  };
  const head = parseGroups(halves[0]);
  const after = halves.length === 2 ? parseGroups(halves[1]) : [];
  if (!head || !after) return null;
  const explicit = head.length + after.length;
  if (halves.length === 1) return explicit === 8 ? head : null;
  if (explicit > 7) return null;
  return [...head, ...new Array<number>(8 - explicit).fill(0), ...after];
}

function ipv4Bits(octets: number[]): number {
  return ((octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]) >>> 0;
}

function inIPv4Range(octets: number[], base: string, prefix: number): boolean {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return ((ipv4Bits(octets) & mask) >>> 0) === ((ipv4Bits(parseIPv4(base) ?? [0, 0, 0, 0]) & mask) >>> 0);
}

function inIPv6Range(groups: number[], base: string, prefix: number): boolean {
  const baseGroups = parseIPv6(base) ?? [];
  for (let i = 0; i < 8; i++) {
    const bits = Math.min(16, Math.max(0, prefix - i * 16));
    if (bits === 0) return true;
    const mask = (0xffff << (16 - bits)) & 0xffff;
    if ((groups[i] & mask) !== (baseGroups[i] & mask)) return false;
  }
  return true;
}

function classifyIPv4(octets: number[]): AddressClass {
  for (const [base, prefix, rule] of IPV4_RULES) {
    if (inIPv4Range(octets, base, prefix)) return rule;
  }
  return { kind: "public" };
}

/** The IPv4 address an IPv6 address reaches when it embeds one (mapped, compatible, NAT64, 6to4). */
function embeddedIPv4(groups: number[]): number[] | null {
  const fromGroups = (high: number, low: number) => [high >> 8, high & 0xff, low >> 8, low & 0xff];
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; "::" and "::1" are IPv6 rules of their own).
  if (zeros(0, 5) && groups[5] === 0xffff) return fromGroups(groups[6], groups[7]);
  if (zeros(0, 6) && (groups[6] !== 0 || groups[7] > 1)) return fromGroups(groups[6], groups[7]);
  // 64:ff9b::/96, the well-known NAT64 prefix: a NAT64 gateway connects to the embedded address.
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return fromGroups(groups[6], groups[7]);
  // 2002::/16 (6to4) carries the IPv4 address in the next 32 bits.
  if (groups[0] === 0x2002) return fromGroups(groups[1], groups[2]);
  return null;
}

/** Classifies an IP address string; null when the text is not an IP address. */
export function classifyAddress(address: string): AddressClass | null {
  const v4 = parseIPv4(address);
  if (v4) return classifyIPv4(v4);
  const v6 = parseIPv6(address);
  if (!v6) return null;
  const embedded = embeddedIPv4(v6);
  if (embedded) return classifyIPv4(embedded);
  for (const [base, prefix, rule] of IPV6_RULES) {
    if (inIPv6Range(v6, base, prefix)) return rule;
  }
  return { kind: "public" };
}
