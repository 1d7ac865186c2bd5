import { describe, expect, test } from "bun:test";
import { classifyAddress, isIpLiteral, isPublicAddress } from "./ip_policy.ts";

describe("classifyAddress()", () => {
  test("reads every IPv4 spelling a URL parser accepts as the same address", () => {
    for (const spelling of ["127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "127.0.1", "0X7F.1", "017700000001", "127.0.0.1."]) {
      expect({ spelling, parsed: classifyAddress(spelling) }).toEqual({
        spelling,
        parsed: { kind: "ipv4", address: "127.0.0.1" },
      });
    }
    expect(classifyAddress("0x")).toEqual({ kind: "ipv4", address: "0.0.0.0" });
    expect(classifyAddress("4294967295")).toEqual({ kind: "ipv4", address: "255.255.255.255" });
  });

  test("agrees with the WHATWG URL parser on IPv4 spellings", () => {
    for (const spelling of ["0x", "0", "1", "0.0x10", "1.2.3", "00.0x00.000.0x0", "0xffffffff", "3.0x1000000" , "010.010.010.010", "0x7f.0.0.1."]) {
      const parsed = classifyAddress(spelling);
      let url: string | undefined;
      try {
        url = new URL(`http://${spelling}/`).hostname;
      } catch {
        url = undefined;
      }
      expect({ spelling, ours: parsed?.address }).toEqual({ spelling, ours: url === undefined ? undefined : url.replace(/\.$/, "") });
    }
  });

  test("rejects IPv4-looking text that no parser accepts", () => {
    for (const text of ["4294967296", "256.0.0.1", "1.2.3.4.5", "1..2.3", "08.0.0.1", "0x1g.0.0.1", " 1.2.3.4", "1.2.3.-4", "", "."]) {
      expect({ text, parsed: classifyAddress(text) }).toEqual({ text, parsed: undefined });
    }
  });

  test("reads IPv6 with compression, brackets, zone ids and embedded IPv4, in RFC 5952 form", () => {
    expect(classifyAddress("::1")).toEqual({ kind: "ipv6", address: "::1" });
    expect(classifyAddress("[0:0:0:0:0:0:0:1]")).toEqual({ kind: "ipv6", address: "::1" });
    expect(classifyAddress("2001:DB8:0:0:1:0:0:1")).toEqual({ kind: "ipv6", address: "2001:db8::1:0:0:1" });
    expect(classifyAddress("fe80::1%eth0")).toEqual({ kind: "ipv6", address: "fe80::1" });
    expect(classifyAddress("::ffff:127.0.0.1")).toEqual({ kind: "ipv6", address: "::ffff:127.0.0.1" });
    expect(classifyAddress("::ffff:7f00:1")).toEqual({ kind: "ipv6", address: "::ffff:127.0.0.1" });
    expect(classifyAddress("64:ff9b::10.0.0.1")).toEqual({ kind: "ipv6", address: "64:ff9b::a00:1" });
    expect(classifyAddress("1:2:3:4:5:6:7::")).toEqual({ kind: "ipv6", address: "1:2:3:4:5:6:7:0" });
  });

  test("rejects malformed IPv6 and host names", () => {
    for (const text of ["1::2::3", "12345::1", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8::", "::ffff:0177.0.0.1", "::1.2.3.4:5", "example.com", "abc", "dead:beef", ":::"]) {
      expect({ text, parsed: classifyAddress(text) }).toEqual({ text, parsed: undefined });
    }
  });
});

describe("isIpLiteral()", () => {
  test("is true for any address spelling and false for DNS names", () => {
    expect(isIpLiteral("2130706433")).toBe(true);
    expect(isIpLiteral("[::1]")).toBe(true);
    expect(isIpLiteral("0x7f.1")).toBe(true);
    expect(isIpLiteral("example.com")).toBe(false);
    expect(isIpLiteral("0x7f.example")).toBe(false);
  });
});

describe("isPublicAddress()", () => {
  test("refuses every special-purpose IPv4 range, in any spelling", () => {
    const refused = [
      "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255", "127.0.0.1", "127.1",
      "2130706433", "0177.0.0.1", "0x7f000001", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8",
      "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9",
      "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255", "0x0a.1",
    ];
    for (const address of refused) expect({ address, public: isPublicAddress(address) }).toEqual({ address, public: false });
  });

  test("accepts ordinary public IPv4, including the neighbours of refused ranges", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.1", "172.15.255.255", "172.32.0.1", "192.167.1.1", "198.20.0.1", "223.255.255.255", "134744072"]) {
      expect({ address, public: isPublicAddress(address) }).toEqual({ address, public: true });
    }
  });

  test("refuses special-purpose IPv6 and IPv6 forms that reach a refused IPv4", () => {
    const refused = [
      "::", "::1", "fe80::1", "febf::1", "fc00::1", "fd12:3456::1", "ff02::1", "fec0::1", "100::1", "2001:db8::1",
      "2001::1", "2001:0:4136:e378::1", "2001:2::1", "3fff::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1",
      "::ffff:a9fe:a9fe", "::127.0.0.1", "::8.8.8.8", "64:ff9b::127.0.0.1", "64:ff9b::a00:1", "64:ff9b:1::8.8.8.8",
      "2002:7f00:1::1", "2002:c0a8:101::", "[::1]", "::ffff:0:8.8.8.8",
    ];
    for (const address of refused) expect({ address, public: isPublicAddress(address) }).toEqual({ address, public: false });
  });

  test("accepts global unicast IPv6 and tunnelled forms of public IPv4", () => {
    for (const address of ["2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2001:200::1"]) {
      expect({ address, public: isPublicAddress(address) }).toEqual({ address, public: true });
    }
  });

  test("is false for anything that is not an address", () => {
    for (const text of ["example.com", "", "localhost", "1.2.3.4.5"]) expect(isPublicAddress(text)).toBe(false);
  });
});
