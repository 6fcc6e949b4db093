/**
 * Classifies an IP address as a webhook target: public, private (loopback and private
 * ranges, allowed only with `webhooks.allow_private_networks`) or forbidden (link-local,
 * cloud metadata and non-unicast addresses, never allowed). IPv6 forms that embed an IPv4
 * address (mapped, translated, compatible, NAT64, 6to4, Teredo) are judged by the IPv4
 * address they reach, so `::ffff:127.0.0.1` is loopback, not "some IPv6 address".
 * Parsing and range matching are ipaddr.js's; which ranges are refused, and why, is ours.
 */
import ipaddr from "ipaddr.js";

export type AddressClass =
  | { kind: "public" }
  | { kind: "private"; reason: string }
  | { kind: "forbidden"; reason: string };

type Rule = { kind: "private" | "forbidden"; reason: string };
type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

function rules<T>(table: Array<[string, Rule]>, parse: (cidr: string) => [T, number]): Array<[[T, number], Rule]> {
  return table.map(([cidr, rule]) => [parse(cidr), rule]);
}

/** IPv4 ranges; the most specific range must come first. */
const IPV4_RULES = rules<IPv4>(
  [
    ["169.254.169.254/32", { kind: "forbidden", reason: "a cloud metadata address" }],
    // Alibaba Cloud's metadata service sits inside the CGNAT range, so it precedes 100.64/10.
    ["100.100.100.200/32", { kind: "forbidden", reason: "a cloud metadata address" }],
    ["169.254.0.0/16", { kind: "forbidden", reason: "a link-local address" }],
    ["224.0.0.0/4", { kind: "forbidden", reason: "a multicast address" }],
    ["240.0.0.0/4", { kind: "forbidden", reason: "a reserved or broadcast address" }],
    ["0.0.0.0/8", { kind: "private", reason: "an unspecified address (reaches this host)" }],
    ["127.0.0.0/8", { kind: "private", reason: "a loopback address" }],
    ["10.0.0.0/8", { kind: "private", reason: "a private address" }],
    ["172.16.0.0/12", { kind: "private", reason: "a private address" }],
    ["192.168.0.0/16", { kind: "private", reason: "a private address" }],
    ["100.64.0.0/10", { kind: "private", reason: "a shared (CGNAT) address" }],
    ["198.18.0.0/15", { kind: "private", reason: "a benchmarking-network address" }],
  ],
  (cidr) => ipaddr.IPv4.parseCIDR(cidr),
);

/** IPv6 ranges (addresses that embed an IPv4 address are handled before these). */
const IPV6_RULES = rules<IPv6>(
  [
    ["fd00:ec2::254/128", { kind: "forbidden", reason: "a cloud metadata address" }],
    ["::1/128", { kind: "private", reason: "a loopback address" }],
    ["::/128", { kind: "private", reason: "an unspecified address (reaches this host)" }],
    ["fe80::/10", { kind: "forbidden", reason: "a link-local address" }],
    ["ff00::/8", { kind: "forbidden", reason: "a multicast address" }],
    ["fc00::/7", { kind: "private", reason: "a unique-local (private) address" }],
    ["fec0::/10", { kind: "private", reason: "a site-local (private) address" }],
  ],
  (cidr) => ipaddr.IPv6.parseCIDR(cidr),
);

const LOCAL_NAT64: Rule = { kind: "private", reason: "a local-use NAT64 address (64:ff9b:1::/48), which reaches whatever your translator maps it to" };

/**
 * IPv6 forms that carry an IPv4 address, as [prefix, byte positions of the IPv4 address in
 * the 16-byte address]. A form with several positions is judged by the strictest.
 */
const EMBEDDING: Array<{ prefix: [IPv6, number]; at: number[][]; xor?: number; rule?: Rule }> = [
  // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated, RFC 6145).
  { prefix: ipaddr.IPv6.parseCIDR("::ffff:0:0/96"), at: [[12, 13, 14, 15]] },
  { prefix: ipaddr.IPv6.parseCIDR("::ffff:0:0:0/96"), at: [[12, 13, 14, 15]] },
  // The well-known NAT64 prefix (RFC 6052): a NAT64 gateway connects to the embedded address.
  { prefix: ipaddr.IPv6.parseCIDR("64:ff9b::/96"), at: [[12, 13, 14, 15]] },
  // Local-use NAT64 (RFC 8215): the operator picks a /48, /56, /64 or /96 prefix inside it,
  // and each puts the IPv4 address elsewhere (RFC 6052 section 2.2, skipping byte 8).
  { prefix: ipaddr.IPv6.parseCIDR("64:ff9b:1::/48"), at: [[6, 7, 9, 10], [7, 9, 10, 11], [9, 10, 11, 12], [12, 13, 14, 15]], rule: LOCAL_NAT64 },
  // 6to4 carries the IPv4 address right after 2002::/16.
  { prefix: ipaddr.IPv6.parseCIDR("2002::/16"), at: [[2, 3, 4, 5]] },
  // Teredo: the client's IPv4 address is the last 32 bits, inverted.
  { prefix: ipaddr.IPv6.parseCIDR("2001::/32"), at: [[12, 13, 14, 15]], xor: 0xff },
];

/** Orders classes from most to least permissive, so the strictest one wins. */
const SEVERITY = { public: 0, private: 1, forbidden: 2 } as const;

function strictest(classes: AddressClass[]): AddressClass {
  return classes.reduce((worst, next) => (SEVERITY[next.kind] > SEVERITY[worst.kind] ? next : worst));
}

function classifyIPv4(address: IPv4): AddressClass {
  for (const [range, rule] of IPV4_RULES) {
    if (address.match(range)) return rule;
  }
  return { kind: "public" };
}

/** The classes of the IPv4 addresses an IPv6 address embeds, or null when it embeds none. */
function embeddedClasses(address: IPv6): AddressClass[] | null {
  const bytes = address.toByteArray();
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  // ::a.b.c.d (compatible, deprecated); "::" and "::1" are IPv6 rules of their own.
  if (zeros(0, 12) && (!zeros(12, 15) || bytes[15] > 1)) return [classifyIPv4(new ipaddr.IPv4(bytes.slice(12)))];
  for (const form of EMBEDDING) {
    if (!address.match(form.prefix)) continue;
    const reached = form.at.map((positions) => classifyIPv4(new ipaddr.IPv4(positions.map((i) => bytes[i] ^ (form.xor ?? 0)))));
    return form.rule ? [form.rule, ...reached] : reached;
  }
  return null;
}

/** Classifies an IP address string (an IPv6 zone index is ignored); null when the text is not an IP address. */
export function classifyAddress(text: string): AddressClass | null {
  // Dotted quads only: a resolver answers those, and URL has already normalised "127.1" or "0x7f.1".
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return classifyIPv4(ipaddr.IPv4.parse(text));
  if (!text.includes(":") || !ipaddr.IPv6.isValid(text)) return null;
  const address = ipaddr.IPv6.parse(text);
  const embedded = embeddedClasses(address);
  if (embedded) return strictest(embedded);
  for (const [range, rule] of IPV6_RULES) {
    if (address.match(range)) return rule;
  }
  return { kind: "public" };
}
