import { describe, expect, it } from "vitest";
import { classifyAddress } from "../../../plugins/webhooks/address.ts";

const kind = (address: string) => classifyAddress(address)?.kind ?? "not an address";

describe("webhook target address classification", () => {
  it.each([
    ["8.8.8.8", "public"],
    ["93.184.216.34", "public"],
    ["172.32.0.1", "public"],
    ["100.128.0.1", "public"],
    ["127.0.0.1", "private"],
    ["127.255.255.254", "private"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["100.127.255.255", "private"],
    ["0.0.0.0", "private"],
    ["169.254.169.254", "forbidden"],
    ["169.254.1.1", "forbidden"],
    ["100.100.100.200", "forbidden"],
    ["224.0.0.1", "forbidden"],
    ["255.255.255.255", "forbidden"],
  ])("IPv4 %s is %s", (address, expected) => {
    expect(kind(address)).toBe(expected);
  });

  it.each([
    ["2606:4700:4700::1111", "public"],
    ["2001:db8::1", "public"],
    ["::1", "private"],
    ["0:0:0:0:0:0:0:1", "private"],
    ["::", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fec0::1", "private"],
    ["fe80::1", "forbidden"],
    ["fe80::1%eth0", "forbidden"],
    ["febf::1", "forbidden"],
    ["fd00:ec2::254", "forbidden"],
    ["ff02::1", "forbidden"],
  ])("IPv6 %s is %s", (address, expected) => {
    expect(kind(address)).toBe(expected);
  });

  it.each([
    ["::ffff:127.0.0.1", "private"],
    ["::ffff:7f00:1", "private"],
    ["0:0:0:0:0:ffff:7f00:1", "private"],
    ["::ffff:169.254.169.254", "forbidden"],
    ["::ffff:a9fe:a9fe", "forbidden"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:8.8.8.8", "public"],
    ["::127.0.0.1", "private"],
    ["64:ff9b::a9fe:a9fe", "forbidden"],
    ["64:ff9b::8.8.8.8", "public"],
    ["2002:7f00:1::1", "private"],
    ["2002:a9fe:a9fe::", "forbidden"],
    // IPv4-translated ::ffff:0:a.b.c.d (RFC 6145).
    ["::ffff:0:127.0.0.1", "private"],
    ["::ffff:0:7f00:1", "private"],
    ["::ffff:0:169.254.169.254", "forbidden"],
    ["::ffff:0:10.1.2.3", "private"],
    // Local-use NAT64 64:ff9b:1::/48 (RFC 8215): private whatever it embeds, forbidden when any
    // prefix length the operator may use (/48, /56, /64, /96) puts a forbidden address in it.
    ["64:ff9b:1::7f00:1", "private"],
    ["64:ff9b:1::8.8.8.8", "private"],
    ["64:ff9b:1::a9fe:a9fe", "forbidden"],
    ["64:ff9b:1:a9fe:a9:fe00::", "forbidden"],
    // Teredo 2001::/32: the client's IPv4 address is the last 32 bits inverted.
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "private"],
    ["2001:0:4136:e378:8000:63bf:5601:5601", "forbidden"],
    ["2001:0:4136:e378:8000:63bf:f7f7:f7f7", "public"],
  ])("IPv6 %s embedding IPv4 is judged by the IPv4 address: %s", (address, expected) => {
    expect(kind(address)).toBe(expected);
  });

  it.each(["example.com", "1.2.3", "1.2.3.256", "01.2.3.4.5", "::1::2", "12345::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", ""])(
    "%j is not an address",
    (text) => {
      expect(classifyAddress(text)).toBeNull();
    },
  );

  it.each([["::ffff:1.2.3.4"], ["1::8"], ["1:2:3:4:5:6:1.2.3.4"], ["1:2:3:4:5:6:7:8"], ["FE80::1%eth0"]])("%s is an address", (text) => {
    expect(classifyAddress(text)).not.toBeNull();
  });
});
