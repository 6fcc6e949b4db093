import { describe, expect, it } from "vitest";
import { checkCallbackUrl, type TargetPolicy } from "../../../plugins/webhooks/target.ts";

/** A resolver with a fixed table: names not in it do not resolve. */
function resolver(table: Record<string, string[]>): TargetPolicy["lookupHost"] {
  return async (host) => {
    const found = table[host];
    if (!found) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
    return found;
  };
}

const dns = resolver({
  "hooks.example.com": ["93.184.216.34", "2606:2800:220:1::1"],
  "internal.example.com": ["10.0.0.7"],
  "mixed.example.com": ["93.184.216.34", "127.0.0.1"],
  "mapped.example.com": ["::ffff:127.0.0.1"],
  "rebound.example.com": ["169.254.169.254"],
  localhost: ["127.0.0.1", "::1"],
  "empty.example.com": [],
});

async function reason(url: string, allowPrivateNetworks = false): Promise<string | null> {
  const checked = await checkCallbackUrl(url, { allowPrivateNetworks, lookupHost: dns });
  return checked.ok ? null : checked.reason;
}

describe("callback_url policy", () => {
  it("accepts http and https URLs whose host resolves to public addresses only", async () => {
    expect(await reason("https://hooks.example.com/webhook?x=1")).toBeNull();
    expect(await reason("http://hooks.example.com:8080/")).toBeNull();
    expect(await reason("https://93.184.216.34/hook")).toBeNull();
    expect(await reason("https://[2606:4700:4700::1111]/hook")).toBeNull();
  });

  it("refuses URLs that are not http(s) or carry credentials", async () => {
    expect(await reason("not a url")).toMatch(/not a valid absolute URL/);
    expect(await reason("/relative/path")).toMatch(/not a valid absolute URL/);
    expect(await reason("ftp://hooks.example.com/")).toMatch(/must use http or https, not ftp/);
    expect(await reason("file:///etc/passwd")).toMatch(/must use http or https/);
    expect(await reason("https://user:pw@hooks.example.com/")).toMatch(/must not contain credentials/);
    expect(await reason("https://token@hooks.example.com/")).toMatch(/must not contain credentials/);
  });

  it("always refuses link-local and metadata targets, even with allow_private_networks", async () => {
    for (const allow of [false, true]) {
      expect(await reason("http://169.254.169.254/latest/meta-data/", allow)).toMatch(/cloud metadata address, which is never allowed/);
      expect(await reason("http://169.254.10.1/", allow)).toMatch(/link-local address, which is never allowed/);
      expect(await reason("http://[fe80::1]/", allow)).toMatch(/link-local/);
      expect(await reason("http://[fd00:ec2::254]/", allow)).toMatch(/metadata/);
      expect(await reason("http://metadata.google.internal/computeMetadata/v1/", allow)).toMatch(/cloud metadata service/);
      expect(await reason("http://METADATA.google.internal./", allow)).toMatch(/cloud metadata service/);
      expect(await reason("http://rebound.example.com/", allow)).toMatch(/rebound\.example\.com \(169\.254\.169\.254\) is a cloud metadata address/);
    }
  });

  it("refuses loopback and private targets unless allow_private_networks is set", async () => {
    const privateTargets = [
      "http://127.0.0.1:9000/",
      "http://localhost/",
      "http://10.0.0.1/",
      "http://172.20.1.1/",
      "http://192.168.0.10/",
      "http://100.64.1.1/",
      "http://0.0.0.0/",
      "http://[::1]/",
      "http://[fd00::1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://internal.example.com/",
      "http://mapped.example.com/",
      // Numeric spellings WHATWG URL normalises to 127.0.0.1.
      "http://2130706433/",
      "http://0x7f.1/",
      "http://127.1/",
    ];
    for (const url of privateTargets) {
      expect(await reason(url), url).toMatch(/set webhooks\.allow_private_networks: true/);
      expect(await reason(url, true), url).toBeNull();
    }
  });

  it("refuses a name when any of its addresses is refused (the client may connect to any)", async () => {
    expect(await reason("https://mixed.example.com/")).toMatch(/mixed\.example\.com \(127\.0\.0\.1\) is a loopback address/);
  });

  it("refuses a name that does not resolve, saying so", async () => {
    const unknown = await checkCallbackUrl("https://nowhere.invalid/", { allowPrivateNetworks: false, lookupHost: dns });
    expect(unknown).toMatchObject({ ok: false, unresolved: true });
    expect(await reason("https://nowhere.invalid/")).toMatch(/nowhere\.invalid does not resolve \(getaddrinfo ENOTFOUND/);
    expect(await reason("https://empty.example.com/")).toMatch(/does not resolve/);
  });
});
