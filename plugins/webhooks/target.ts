/**
 * The callback URL policy (SSRF guard), applied at submission and again before every
 * delivery attempt against the addresses the host name resolves to then, so a name that
 * was public at submission and points inside later is still refused. The attempt then
 * connects to exactly the addresses vetted here (`addresses`), never to a new resolution
 * of the name, so a name that changes its answer between the check and the connection
 * (DNS rebinding) cannot slip an address past the check.
 */
import { classifyAddress } from "./address.ts";

export interface TargetPolicy {
  allowPrivateNetworks: boolean;
  lookupHost: (hostname: string) => Promise<string[]>;
}

/** Names of cloud metadata services; refused before any resolution, whatever they resolve to. */
const METADATA_HOSTS = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.tencentyun.com",
  "metadata.azure.internal",
]);

/**
 * A refusal is final (a delivery to it is never retried), except `unresolved`: the name did
 * not resolve, which at delivery time is a transient failure like any network error.
 */
export type Checked = { ok: true; url: URL; addresses: string[] } | { ok: false; reason: string; unresolved?: true };

type Shape = { ok: true; url: URL; host: string; isAddress: boolean } | { ok: false; reason: string };

/** The parts of the check that need no DNS: scheme, credentials, literal addresses, metadata names. */
function checkUrlShape(text: string, allowPrivateNetworks: boolean): Shape {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: "callback_url is not a valid absolute URL" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { ok: false, reason: `callback_url must use http or https, not ${url.protocol.slice(0, -1)}` };
  }
  if (url.username !== "" || url.password !== "") {
    return { ok: false, reason: "callback_url must not contain credentials (user:password@); authenticate the webhook with its signature" };
  }
  const host = hostOf(url);
  // URL has already normalised numeric forms ("2130706433", "0x7f.1" -> "127.0.0.1").
  const literal = classifyAddress(host);
  if (literal) {
    const refused = refusal(literal, host, allowPrivateNetworks);
    return refused ? { ok: false, reason: refused } : { ok: true, url, host, isAddress: true };
  }
  if (METADATA_HOSTS.has(host.replace(/\.$/, ""))) {
    return { ok: false, reason: `callback_url host ${host} is a cloud metadata service, which is never allowed` };
  }
  return { ok: true, url, host, isAddress: false };
}

/** Full check: the shape, then every address the host resolves to must be allowed. */
export async function checkCallbackUrl(text: string, policy: TargetPolicy): Promise<Checked> {
  const shape = checkUrlShape(text, policy.allowPrivateNetworks);
  if (!shape.ok) return shape;
  const { url, host } = shape;
  if (shape.isAddress) return { ok: true, url, addresses: [host] };
  let addresses: string[];
  try {
    addresses = await policy.lookupHost(host);
  } catch (error) {
    return { ok: false, reason: `callback_url host ${host} does not resolve (${(error as Error).message})`, unresolved: true };
  }
  if (addresses.length === 0) return { ok: false, reason: `callback_url host ${host} does not resolve`, unresolved: true };
  // Every address counts: the HTTP client may connect to any of them.
  for (const address of addresses) {
    const classified = classifyAddress(address);
    if (!classified) return { ok: false, reason: `callback_url host ${host} resolved to "${address}", which is not an IP address` };
    const refused = refusal(classified, `${host} (${address})`, policy.allowPrivateNetworks);
    if (refused) return { ok: false, reason: refused };
  }
  return { ok: true, url, addresses };
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, "");
}

function refusal(classified: NonNullable<ReturnType<typeof classifyAddress>>, what: string, allowPrivateNetworks: boolean): string | null {
  if (classified.kind === "forbidden") return `callback_url host ${what} is ${classified.reason}, which is never allowed`;
  if (classified.kind === "private" && !allowPrivateNetworks) {
    return `callback_url host ${what} is ${classified.reason}; set webhooks.allow_private_networks: true to allow loopback and private targets`;
  }
  return null;
}
