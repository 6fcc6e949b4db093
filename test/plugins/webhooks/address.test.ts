import { describe, expect, it } from "vitest";
import { classifyAddress, parseIPv6 } from "../../../plugins/webhooks/address.ts";

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
  ])("IPv6 %s embedding IPv4 is judged by the IPv4 address: %s", (address, expected) => {
    expect(kind(address)).toBe(expected);
  });

  it.each(["example.com", "1.2.3", "1.2.3.256", "01.2.3.4.5", "::1::2", "12345::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", ""])(
    "%j is not an address",
    (text) => {
      expect(classifyAddress(text)).toBeNull();
    },
  );

  it("parses IPv6 forms into eight groups", () => {
    expect(parseIPv6("::")).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIPv6("1::8")).toEqual([1, 0, 0, 0, 0, 0, 0, 8]);
    expect(parseIPv6("::ffff:1.2.3.4")).toEqual([0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
    expect(parseIPv6("1:2:3:4:5:6:7:8")).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseIPv6("1:2:3:4:5:6:1.2.3.4")).toEqual([1, 2, 3, 4, 5, 6, 0x102, 0x304]);
  });
});
