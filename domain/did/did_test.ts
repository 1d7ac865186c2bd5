import { describe, expect, test } from "bun:test";
import {
  artifactDidFromDigest,
  base32LowerDecode,
  base32LowerEncode,
  base64UrlDecode,
  base64UrlEncode,
  buildDidPkh,
  buildDidPkhFromCaip10,
  computeDidHash,
  controllerIdentity,
  didAddressFromHash,
  didWebLocation,
  didJwkToJwk,
  didPkhToCaip10,
  didToAddress,
  extractAddressFromDid,
  getDomainFromDidWeb,
  isDomainNameHost,
  isSameControllerId,
  jwkToDidJwk,
  normalizeDid,
  normalizeSubjectDid,
  parseArtifactDid,
  parseDidPkh,
  publicJwkEquals,
  recordSubjectDid,
  validateDidAddress,
} from "./mod.ts";
import type { Result } from "../result.ts";

function value<T>(result: Result<T, string>): T {
  if (!result.ok) throw new Error(`expected ok, got ${result.code}: ${result.message}`);
  return result.value;
}

function failure(result: Result<unknown, string>): { code: string; message: string } {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return { code: result.code, message: result.message };
}

const TEST_JWK = {
  kty: "EC",
  crv: "P-256",
  x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4",
  y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
};
const TEST_DID_JWK =
  "did:jwk:eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImY4M09KM0Q3eEkxWXAxVjJpRklZQTduNU9ZWGM0SzFVbzdqWTE0RktNQzQiLCJ5IjoieF9GRXpSdTltMzZITE5fdHVlNjU5TE5wWFc2cEN5U3Rpa1lqS0lXSTVhMCJ9";
const ADDR = "0x1111111111111111111111111111111111111111";
const ARTIFACT_DID = "did:artifact:bafkreibuuyyqyb7jqrlflorjiiko2efz2xgagwxxdgathcrdpcniiyzhfi";
const OTHER_ARTIFACT_DID = "did:artifact:bafkreicuuyyqyb7jqrlflorjiiko2efz2xgagwxxdgathcrdpcniiyzhfi";

const jwkDid = (jwk: Record<string, unknown>) => `did:jwk:${base64UrlEncode(new TextEncoder().encode(JSON.stringify(jwk)))}`;

describe("normalizeDid()", () => {
  const table: [string, string][] = [
    ["did:web:Example.COM", "did:web:example.com"],
    ["Example.COM", "did:web:example.com"],
    ["did:web:Example.COM/path/to", "did:web:example.com/path/to"],
    ["did:web:www.example.com", "did:web:example.com"],
    ["did:web:api.example.com#key-1", "did:web:api.example.com"],
    ["did:pkh:EIP155:1:0xABC", "did:pkh:eip155:1:0xabc"],
    ["did:handle:Twitter:alice", "did:handle:twitter:alice"],
    ["did:handle:twitter:Alice", "did:handle:twitter:Alice"],
    ["  did:key:z6MkTest  ", "did:key:z6MkTest"],
    ["did:ethr:0xabc", "did:ethr:0xabc"],
  ];
  for (const [input, expected] of table) {
    test(`normalizes ${JSON.stringify(input)} to ${expected}`, () => {
      expect(value(normalizeDid(input))).toBe(expected);
    });
  }

  test("rejects the reference's invalid inputs with INVALID_DID", () => {
    for (const input of ["did:", "did:pkh:eip155:1", "did:pkh:eip155:1:0xabc:extra", "did:handle:twitter"]) {
      expect(failure(normalizeDid(input)).code).toBe("INVALID_DID");
    }
  });

  test("uses the reference messages", () => {
    expect(failure(normalizeDid("   ")).message).toBe("Input must be a non-empty string");
    expect(failure(normalizeDid("did:")).message).toBe("Invalid DID format");
    expect(failure(normalizeDid("did:web:")).message).toBe("Invalid DID format");
    expect(failure(normalizeDid("did:pkh:")).message).toBe("Invalid DID format");
    expect(failure(normalizeDid("did:pkh:eip155:1")).message).toBe("Invalid did:pkh format");
    expect(failure(normalizeDid("did:pkh:eip155::0xabc")).message).toBe("Invalid did:pkh components");
    expect(failure(normalizeDid("did:web:/path")).message).toBe("Invalid did:web identifier");
    expect(failure(normalizeDid("did:handle:twitter:")).message).toBe("Invalid did:handle components");
  });

  test("turns a bare domain into a did:web, dropping one trailing dot and one leading www", () => {
    expect(value(normalizeDid("www.Example.com."))).toBe("did:web:example.com");
    expect(value(normalizeDid("garbage"))).toBe("did:web:garbage");
    expect(value(normalizeDid("www.www.example.com"))).toBe("did:web:www.example.com");
    expect(value(normalizeDid("example.com.."))).toBe("did:web:example.com.");
  });

  test("keeps the case of a did:web path and lowercases colon paths and ports", () => {
    expect(value(normalizeDid("did:web:Example.com/Users/Alice"))).toBe("did:web:example.com/Users/Alice");
    expect(value(normalizeDid("did:web:Example.com:user:Alice"))).toBe("did:web:example.com:user:alice");
    expect(value(normalizeDid("did:web:localhost%3A8080"))).toBe("did:web:localhost%3a8080");
  });

  test("cuts a fragment for every method", () => {
    expect(value(normalizeDid("did:pkh:eip155:1:0xABC#key-1"))).toBe("did:pkh:eip155:1:0xabc");
    expect(value(normalizeDid("did:key:z6MkTest#z6MkTest"))).toBe("did:key:z6MkTest");
    expect(value(normalizeDid(`${TEST_DID_JWK}#0`))).toBe(TEST_DID_JWK);
    expect(value(normalizeDid("example.com#frag"))).toBe("did:web:example.com");
    expect(failure(normalizeDid("#only-a-fragment")).code).toBe("INVALID_DID");
  });

  test("leaves did:key, did:ethr, did:artifact and unknown methods as written", () => {
    expect(value(normalizeDid("did:key:z6MkHaXU"))).toBe("did:key:z6MkHaXU");
    expect(value(normalizeDid("did:ethr:0xABC"))).toBe("did:ethr:0xABC");
    expect(value(normalizeDid(ARTIFACT_DID))).toBe(ARTIFACT_DID);
    expect(value(normalizeDid("did:example:Something-Unusual"))).toBe("did:example:Something-Unusual");
    expect(value(normalizeDid("did:WEB:Example.com"))).toBe("did:WEB:Example.com");
  });

  test("rejects a string that names another method in the wrong case instead of wrapping it in a did:web", () => {
    expect(failure(normalizeDid("DID:web:example.com")).message).toBe("Expected did:web DID");
  });

  test("validates did:jwk and keeps it unchanged", () => {
    expect(value(normalizeDid(TEST_DID_JWK))).toBe(TEST_DID_JWK);
    expect(failure(normalizeDid(`${TEST_DID_JWK}:extra`)).message).toBe(
      "did:jwk must have exactly 3 colon-separated parts, got 4",
    );
    expect(failure(normalizeDid("did:jwk:abc+def")).message).toBe("Identifier contains invalid base64url characters");
    expect(failure(normalizeDid("did:jwk:bm90IGpzb24")).message).toBe("Decoded identifier is not valid JSON");
    expect(failure(normalizeDid(jwkDid([1, 2] as unknown as Record<string, unknown>))).message).toBe(
      "Decoded JWK must be a JSON object",
    );
    expect(failure(normalizeDid(jwkDid({ kty: "oct", k: "abc" }))).message).toBe(
      "Invalid or missing kty field (must be one of: EC, OKP, RSA)",
    );
    expect(failure(normalizeDid(jwkDid({ ...TEST_JWK, d: "secret" }))).message).toBe(
      "DID must reference a public key — private key component (d) is not allowed",
    );
    expect(failure(normalizeDid(jwkDid({ kty: "RSA", n: "abc", e: "AQAB", p: "x" }))).message).toContain("(p)");
    expect(failure(normalizeDid(jwkDid({ kty: "EC", crv: "P-256", x: "abc" }))).message).toBe(
      "Missing required EC JWK field: y",
    );
    expect(value(normalizeDid(jwkDid({ kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" })))).toStartWith(
      "did:jwk:",
    );
  });
});

describe("computeDidHash() and the DID address", () => {
  const vectors: [string, `0x${string}`, `0x${string}`][] = [
    ["did:web:example.com", "0x505b0e657e7acabd2c14e517173a347faed486bb69081ef673c6e52c03f57f3e", "0x173a347faed486bb69081ef673c6e52c03f57f3e"],
    ["did:web:mygame.com", "0x6866cd0f77282fac4de34739db2de0adbca432e989bb056003b589098ec1debc", "0xdb2de0adbca432e989bb056003b589098ec1debc"],
    ["did:web:api.example.com", "0xbb3fc58320074965f25f254509a34a416806a7eba14b6b183369082602e8064b", "0x09a34a416806a7eba14b6b183369082602e8064b"],
    ["did:web:example.com/path/to", "0xe68ab420f14680e453c0a135034795cac130e05c760bc5ccf236347cf01a0a6b", "0x034795cac130e05c760bc5ccf236347cf01a0a6b"],
    [`did:pkh:eip155:66238:${ADDR}`, "0x88e217fe3f1863ab5aa48c7f313ff9b86181c7d5ac1c9be2be0b28603c59a134", "0x313ff9b86181c7d5ac1c9be2be0b28603c59a134"],
    [`did:pkh:eip155:1:${ADDR}`, "0xce45e3a757acf2710076b6e9a14674f0a9da2de5ab514c5830e6c9c2030a12d6", "0xa14674f0a9da2de5ab514c5830e6c9c2030a12d6"],
    ["did:handle:github:octocat", "0xc3d805d48f890d6f569a9e8d14469be50c40e20fb594a1d3567f46f60b1cb72c", "0x14469be50c40e20fb594a1d3567f46f60b1cb72c"],
    ["did:key:z6MkTest", "0x570c9b593dcfbe77ac79db850cacc26807e3f534159d1038c72039a2a41fd6cc", "0x0cacc26807e3f534159d1038c72039a2a41fd6cc"],
    [`did:ethr:${ADDR}`, "0x301189f6eae36565798de3d4c31a6be5eea61b73263ef566ec807037e766ba98", "0xc31a6be5eea61b73263ef566ec807037e766ba98"],
    [ARTIFACT_DID, "0x14ca55b828ea470c0043afc7a4a6caa9cfbc4b854e2d259a3cfd0d6668b23da4", "0xa4a6caa9cfbc4b854e2d259a3cfd0d6668b23da4"],
    [OTHER_ARTIFACT_DID, "0x030302ae17974af8b72fc561772d4490eff79a211ee28fef3986623374a46592", "0x772d4490eff79a211ee28fef3986623374a46592"],
  ];
  for (const [did, hash, address] of vectors) {
    test(`hashes ${did}`, () => {
      expect(value(computeDidHash(did))).toBe(hash);
      expect(value(didAddressFromHash(hash))).toBe(address);
      expect(value(didToAddress(did))).toBe(address);
    });
  }

  test("hashes the normalized DID, so equivalent spellings share a hash", () => {
    const expected = value(computeDidHash("did:web:example.com"));
    for (const spelling of ["Example.COM", " did:web:WWW.example.com. ", "did:web:example.com#key-1", "www.example.com"]) {
      expect(value(computeDidHash(spelling))).toBe(expected);
    }
  });

  test("does not lowercase did:ethr, so its hash depends on case", () => {
    expect(value(computeDidHash("did:ethr:0xABC"))).not.toBe(value(computeDidHash("did:ethr:0xabc")));
  });

  test("hashes the did:jwk test vector to its DID address", () => {
    expect(value(didToAddress(TEST_DID_JWK))).toBe("0x8e5aa3c307032432d7f8c799dd6a4d681dcb85d4");
  });

  test("never checksums the DID address and lowercases an upper-case hash", () => {
    expect(value(didAddressFromHash("0x505B0E657E7ACABD2C14E517173A347FAED486BB69081EF673C6E52C03F57F3E"))).toBe(
      "0x173a347faed486bb69081ef673c6e52c03f57f3e",
    );
  });

  test("rejects a hash that is not 32-byte hex", () => {
    for (const hash of ["", "0x", "0x1234", `0x${"g".repeat(64)}`, `${"a".repeat(64)}`, `0x${"a".repeat(66)}`]) {
      expect(failure(didAddressFromHash(hash))).toEqual({ code: "INVALID_DID", message: "didHash must be 32-byte hex" });
    }
  });

  test("fails computeDidHash and didToAddress with INVALID_DID for an invalid DID", () => {
    expect(failure(computeDidHash("did:")).code).toBe("INVALID_DID");
    expect(failure(didToAddress("did:pkh:eip155:1")).code).toBe("INVALID_DID");
  });

  test("validateDidAddress() compares without case and is false on any error", () => {
    expect(validateDidAddress("did:web:example.com", "0x173A347FAED486BB69081EF673C6E52C03F57F3E")).toBe(true);
    expect(validateDidAddress("did:web:example.org", "0x173a347faed486bb69081ef673c6e52c03f57f3e")).toBe(false);
    expect(validateDidAddress("did:", "0x173a347faed486bb69081ef673c6e52c03f57f3e")).toBe(false);
  });
});

describe("did:web helpers", () => {
  test("getDomainFromDidWeb() returns the normalized host without the path", () => {
    expect(value(getDomainFromDidWeb("did:web:Example.com/path/to"))).toBe("example.com");
    expect(value(getDomainFromDidWeb("did:web:www.example.com"))).toBe("example.com");
    expect(value(getDomainFromDidWeb("did:web:example.com:user:alice"))).toBe("example.com:user:alice");
    expect(value(getDomainFromDidWeb("did:web:localhost%3A8443"))).toBe("localhost%3a8443");
  });

  test("didWebLocation(): a host that is an IP address in any spelling (v4 dotted, shorthand, numeric, hex, v6) names no domain (issue 33)", () => {
    const ips = [
      "did:web:127.0.0.1", "did:web:0", "did:web:1.2.3", "did:web:2130706433", "did:web:0x7f000001", "did:web:0x7f.1", "did:web:127.0.0.1.",
      "did:web:010.0.0.1", "did:web:999.1.1.1", "did:web:example.123", "did:web:127.0.0.1%3a8443", "did:web:127.0.0.1:user:alice",
      "did:web:[::1]", "did:web:%5b%3a%3a1%5d", "did:web:%5b::ffff:127.0.0.1%5d", "did:web:::1",
    ];
    for (const did of ips) expect({ did, location: didWebLocation(normalizeDid(did).ok ? value(normalizeDid(did)) : did) }).toEqual({ did, location: undefined });
    for (const host of ["127.0.0.1", "0", "1.2.3", "2130706433", "0x7f000001", "0X7F.1", "1.2.3.4.", "example.0x"]) expect({ host, name: isDomainNameHost(host) }).toEqual({ host, name: false });
    for (const host of ["example.com", "1password.com", "123.example", "0x.example", "a.b0", "localhost", "example.com."]) expect({ host, name: isDomainNameHost(host) }).toEqual({ host, name: true });
    expect(didWebLocation("did:web:example.com%3a8443:user:alice")).toEqual({ host: "example.com", port: "8443", path: ["user", "alice"] });
    expect(didWebLocation("did:web:1password.com")).toEqual({ host: "1password.com", port: undefined, path: [] });
  });

  test("didWebLocation(): a name no host can have (a label over 63 characters or edged by `-`, a name over 253) names no domain", () => {
    const label63 = "a".repeat(63);
    const longest = [label63, label63, label63, "a".repeat(61)].join(".");
    for (const host of [`${"a".repeat(64)}.com`, "-bad.com", "bad-.com", "example.-com", `${longest}.a`, `${longest}a`]) {
      expect({ host, name: isDomainNameHost(host) }).toEqual({ host, name: false });
      expect({ host, location: didWebLocation(`did:web:${host}`) }).toEqual({ host, location: undefined });
    }
    for (const host of [`${label63}.com`, longest, `${longest}.`, "xn--bcher-kva.example", "a-b.c-d.example", "a.b"]) {
      expect({ host, name: isDomainNameHost(host) }).toEqual({ host, name: true });
    }
    expect(didWebLocation(`did:web:${longest}`)?.host).toBe(longest);
  });

  test("didWebLocation(): a host written with an escape other than the port's %3A names no domain (no second name for one host)", () => {
    for (const did of ["did:web:ex%61mple.com", "did:web:example%2ecom", "did:web:example.com%2f", "did:web:example.com%3a", "did:web:%65xample.com%3a8443", "did:web:example.com%3a%38443", "did:web:example.com%"]) {
      expect({ did, location: didWebLocation(did) }).toEqual({ did, location: undefined });
    }
    // The port, written plainly: 1 to 65535, no leading zero, never HTTPS's own 443 (a second name for no port).
    for (const did of ["did:web:example.com%3a443", "did:web:example.com%3a08443", "did:web:example.com%3a0", "did:web:example.com%3a65536", "did:web:example.com%3a99999"]) {
      expect({ did, location: didWebLocation(did) }).toEqual({ did, location: undefined });
    }
    expect(didWebLocation("did:web:example.com%3a8443")).toEqual({ host: "example.com", port: "8443", path: [] });
    expect(didWebLocation("did:web:example.com%3a65535")?.port).toBe("65535");
    expect(didWebLocation("did:web:localhost%3a1")?.port).toBe("1");
    expect(didWebLocation("did:web:example.com%3A8443:user:alice")).toEqual({ host: "example.com", port: "8443", path: ["user", "alice"] });
    expect(didWebLocation("did:web:example.com:user%20x")).toEqual({ host: "example.com", port: undefined, path: ["user%20x"] });
  });

  test("didWebLocation(): an empty path segment names no location (no second name for the host or the path without it)", () => {
    for (const did of ["did:web:example.com/", "did:web:example.com:", "did:web:example.com::a", "did:web:example.com/a//b", "did:web:example.com%3a8443:", "did:web:example.com:a/"]) {
      expect({ did, location: didWebLocation(did) }).toEqual({ did, location: undefined });
    }
    expect(didWebLocation("did:web:example.com/a/b")).toEqual({ host: "example.com", port: undefined, path: ["a", "b"] });
    expect(didWebLocation("did:web:example.com:a:b")).toEqual({ host: "example.com", port: undefined, path: ["a", "b"] });
  });

  test("didWebLocation(): each path segment is one plain URL segment, as the did.json lookup fetches (no second name for a path)", () => {
    for (const did of [
      "did:web:example.com:..:b", // looked up as did:web:example.com:b
      "did:web:example.com:a:..:b",
      "did:web:example.com/a/../b",
      "did:web:example.com:.:b",
      "did:web:example.com:us%65r", // an escaped unreserved character is the character: did:web:example.com:user
      "did:web:example.com:%2e%2e:b",
      "did:web:example.com/A%7Eb",
      "did:web:example.com:a%2db",
      "did:web:example.com:a%5fb",
      "did:web:example.com:a%31",
      "did:web:example.com:a%2fb", // one segment that reads as two
      "did:web:example.com/a%5Cb",
      "did:web:example.com:a%00b", // a control character
      "did:web:example.com:a%7f",
      "did:web:example.com:a@b", // not a URL path character the lookup fetches
      "did:web:example.com/a?b",
      "did:web:example.com:a%zz",
      "did:web:example.com:a%",
    ]) {
      expect({ did, location: didWebLocation(did) }).toEqual({ did, location: undefined });
    }
    expect(didWebLocation("did:web:example.com:a.b:c~d_e-f")).toEqual({ host: "example.com", port: undefined, path: ["a.b", "c~d_e-f"] });
    expect(didWebLocation("did:web:example.com:..a:b..")?.path).toEqual(["..a", "b.."]);
    expect(didWebLocation("did:web:example.com:%c3%a9t%c3%a9:a%20b:a%3ab")?.path).toEqual(["%c3%a9t%c3%a9", "a%20b", "a%3ab"]);
    expect(didWebLocation("did:web:example.com/User")?.path).toEqual(["User"]);
  });

  test("getDomainFromDidWeb() refuses other methods", () => {
    expect(failure(getDomainFromDidWeb(`did:pkh:eip155:1:${ADDR}`)).message).toBe("Expected did:web DID");
    expect(failure(getDomainFromDidWeb("did:")).code).toBe("INVALID_DID");
  });
});

describe("did:pkh helpers", () => {
  test("buildDidPkhFromCaip10() lowercases the address", () => {
    expect(value(buildDidPkhFromCaip10("eip155:1:0xABC"))).toBe("did:pkh:eip155:1:0xabc");
    expect(value(buildDidPkhFromCaip10(`eip155:66238:${ADDR}`))).toBe(`did:pkh:eip155:66238:${ADDR}`);
  });

  test("buildDidPkhFromCaip10() is strict about the namespace case and the shape", () => {
    for (const input of ["EIP155:1:0xabc", "eip155:1", "eip155::0xabc", "eip155:1:0xabc:extra", "", "did:pkh:eip155:1:0xabc"]) {
      expect(failure(buildDidPkhFromCaip10(input)).code).toBe("INVALID_DID");
    }
  });

  test("buildDidPkh() lowercases namespace and address", () => {
    expect(value(buildDidPkh("EIP155", "1", "0xABC"))).toBe("did:pkh:eip155:1:0xabc");
    expect(value(buildDidPkh("eip155", 66238, ADDR))).toBe(`did:pkh:eip155:66238:${ADDR}`);
    expect(failure(buildDidPkh("eip155", "", ADDR)).code).toBe("INVALID_DID");
    expect(failure(buildDidPkh("eip155", "1", "0xa:b")).code).toBe("INVALID_DID");
  });

  test("parseDidPkh() and didPkhToCaip10() read the normalized parts", () => {
    expect(value(parseDidPkh("did:pkh:EIP155:66238:0xABC"))).toEqual({ namespace: "eip155", chainId: "66238", address: "0xabc" });
    expect(value(didPkhToCaip10("did:pkh:eip155:1:0xABC#key-1"))).toBe("eip155:1:0xabc");
    expect(failure(parseDidPkh("did:web:example.com")).message).toBe("Expected did:pkh DID");
    expect(failure(didPkhToCaip10("did:pkh:eip155")).code).toBe("INVALID_DID");
  });
});

describe("extractAddressFromDid()", () => {
  test("returns the EIP-55 address of eip155 did:pkh, did:ethr and bare addresses", () => {
    expect(value(extractAddressFromDid("0xabc0000000000000000000000000000000001234"))).toBe(
      "0xAbc0000000000000000000000000000000001234",
    );
    expect(value(extractAddressFromDid("did:pkh:eip155:1:0x6f05d46cd048d3249f4db6bad6d06e2069bcd5eb"))).toBe(
      "0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5eb",
    );
    expect(value(extractAddressFromDid("did:ethr:0x6f05d46cd048d3249f4db6bad6d06e2069bcd5eb"))).toBe(
      "0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5eb",
    );
    expect(value(extractAddressFromDid("did:ethr:0x42:0x6F05D46CD048D3249F4DB6BAD6D06E2069BCD5EB"))).toBe(
      "0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5eb",
    );
  });

  test("rejects a mixed-case address with a bad checksum and other forms", () => {
    for (const input of [
      "0xAbc0000000000000000000000000000000001234".replace("A", "a").replace("b", "B"),
      "did:ethr:0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5EB",
      "did:pkh:solana:1:abc",
      "did:pkh:eip155:1:0xabc",
      "did:web:example.com",
      "0x1234",
      "",
    ]) {
      expect(failure(extractAddressFromDid(input))).toEqual({ code: "INVALID_DID", message: "Unsupported identifier format" });
    }
  });
});

describe("did:jwk helpers", () => {
  test("jwkToDidJwk() reproduces the reference vector", () => {
    const did = value(jwkToDidJwk(TEST_JWK));
    expect(did).toBe(TEST_DID_JWK);
    expect(did.length).toBe(176);
  });

  test("jwkToDidJwk() sorts keys, so member order does not matter", () => {
    const { y, x, crv, kty } = TEST_JWK;
    expect(value(jwkToDidJwk({ y, x, crv, kty }))).toBe(TEST_DID_JWK);
  });

  test("jwkToDidJwk() keeps kid and alg by default and drops them with publicOnly", () => {
    const withKid = { ...TEST_JWK, kid: "key-1", alg: "ES256" };
    const kept = value(jwkToDidJwk(withKid));
    expect(kept).not.toBe(TEST_DID_JWK);
    expect(value(didJwkToJwk(kept))).toEqual(withKid);
    expect(value(jwkToDidJwk(withKid, { publicOnly: true }))).toBe(TEST_DID_JWK);
  });

  test("jwkToDidJwk() rejects private and malformed keys", () => {
    expect(failure(jwkToDidJwk({ ...TEST_JWK, d: "secret" })).code).toBe("INVALID_DID");
    expect(failure(jwkToDidJwk({ ...TEST_JWK, d: "secret" }, { publicOnly: true })).code).toBe("INVALID_DID");
    expect(failure(jwkToDidJwk({ kty: "EC" })).code).toBe("INVALID_DID");
    expect(failure(jwkToDidJwk({ ...TEST_JWK, extra: 1n })).message).toBe("JWK is not serializable as JSON");
  });

  test("didJwkToJwk() decodes a did:jwk and accepts its #0 key reference", () => {
    expect(value(didJwkToJwk(TEST_DID_JWK))).toEqual(TEST_JWK);
    expect(value(didJwkToJwk(`${TEST_DID_JWK}#0`))).toEqual(TEST_JWK);
    expect(failure(didJwkToJwk("did:web:example.com")).message).toBe("Expected did:jwk DID");
  });

  test("publicJwkEquals() ignores kid, use, key_ops, alg and ext only", () => {
    const decorated = { ...TEST_JWK, kid: "k", use: "sig", key_ops: ["verify"], alg: "ES256", ext: true };
    expect(publicJwkEquals(TEST_JWK, decorated)).toBe(true);
    expect(publicJwkEquals(TEST_JWK, { ...TEST_JWK, x: TEST_JWK.y })).toBe(false);
    expect(publicJwkEquals(TEST_JWK, { ...TEST_JWK, x5t: "thumb" })).toBe(false);
    expect(publicJwkEquals(TEST_JWK, { ...TEST_JWK, d: "secret" })).toBe(false);
  });
});

describe("isSameControllerId()", () => {
  test("matches equal normalized DIDs", () => {
    expect(isSameControllerId("did:web:Example.com", "www.example.com")).toBe(true);
    expect(isSameControllerId("did:key:z6MkTest", "did:key:z6MkTest#z6MkTest")).toBe(true);
  });

  test("matches eip155 did:pkh with the same address on any chain", () => {
    expect(isSameControllerId(`did:pkh:eip155:1:${ADDR}`, `did:pkh:eip155:66238:${ADDR.toUpperCase().replace("0X", "0x")}`)).toBe(true);
    expect(isSameControllerId(`did:pkh:eip155:1:${ADDR}`, "did:pkh:eip155:1:0x2222222222222222222222222222222222222222")).toBe(false);
    expect(isSameControllerId("did:pkh:solana:a:abc", "did:pkh:solana:b:abc")).toBe(false);
    expect(isSameControllerId(`did:pkh:eip155:1:${ADDR}`, `did:pkh:bip122:1:${ADDR}`)).toBe(false);
  });

  test("matches did:jwk with the same public key material", () => {
    const withKid = value(jwkToDidJwk({ ...TEST_JWK, kid: "key-1", use: "sig" }));
    expect(isSameControllerId(TEST_DID_JWK, withKid)).toBe(true);
    expect(isSameControllerId(TEST_DID_JWK, value(jwkToDidJwk({ ...TEST_JWK, x: TEST_JWK.y })))).toBe(false);
  });

  test("keeps did:key and did:jwk case significant", () => {
    expect(isSameControllerId("did:key:z6MkTest", "did:key:z6mktest")).toBe(false);
    expect(isSameControllerId(TEST_DID_JWK, TEST_DID_JWK.toLowerCase())).toBe(false);
  });

  test("is false when either side is not a DID or methods differ", () => {
    expect(isSameControllerId("did:", "did:")).toBe(false);
    expect(isSameControllerId(`did:pkh:eip155:1:${ADDR}`, `did:ethr:${ADDR}`)).toBe(false);
    expect(isSameControllerId(TEST_DID_JWK, "did:web:example.com")).toBe(false);
  });
});

describe("controllerIdentity()", () => {
  /** The pairwise rule isSameControllerId had before identities (decisions §3), written out as the reference. */
  const pairwise = (a: string, b: string): boolean => {
    const left = normalizeDid(a);
    const right = normalizeDid(b);
    if (!left.ok || !right.ok) return false;
    if (left.value === right.value) return true;
    const pkhLeft = parseDidPkh(left.value);
    const pkhRight = parseDidPkh(right.value);
    if (pkhLeft.ok && pkhRight.ok) {
      return pkhLeft.value.namespace === "eip155" && pkhRight.value.namespace === "eip155" && pkhLeft.value.address === pkhRight.value.address;
    }
    const jwkLeft = didJwkToJwk(left.value);
    const jwkRight = didJwkToJwk(right.value);
    return jwkLeft.ok && jwkRight.ok && publicJwkEquals(jwkLeft.value, jwkRight.value);
  };

  test("two ids have one identity exactly when the pairwise rule calls them one controller", () => {
    const ids = [
      `did:pkh:eip155:1:${ADDR}`,
      `did:pkh:eip155:66238:${ADDR.toUpperCase().replace("0X", "0x")}`,
      "did:pkh:eip155:1:0x2222222222222222222222222222222222222222",
      `did:pkh:bip122:1:${ADDR}`,
      "did:pkh:solana:a:abc",
      "did:pkh:solana:b:abc",
      "did:pkh:SOLANA:a:ABC",
      `did:ethr:${ADDR}`,
      `did:ethr:0x1:${ADDR}`,
      "did:key:z6MkTest",
      "did:key:z6MkTest#z6MkTest",
      "did:key:z6mktest",
      "did:web:Example.com",
      "www.example.com",
      "eip155-address:" + ADDR,
      TEST_DID_JWK,
      TEST_DID_JWK.toLowerCase(),
      value(jwkToDidJwk({ ...TEST_JWK, kid: "key-1", use: "sig", alg: "ES256" })),
      value(jwkToDidJwk({ ...TEST_JWK, x: TEST_JWK.y })),
      value(jwkToDidJwk({ ...TEST_JWK, x5t: "thumb" })),
      value(jwkToDidJwk({ ...TEST_JWK, extra: { b: 1, a: [2, { d: 3, c: 4 }] } })),
      value(jwkToDidJwk({ extra: { a: [2, { c: 4, d: 3 }], b: 1 }, ...TEST_JWK, kid: "other" })),
      "did:",
      "",
      "not a did at all",
    ];
    for (const a of ids) {
      for (const b of ids) {
        const identityA = controllerIdentity(a);
        const same = identityA !== undefined && identityA === controllerIdentity(b);
        expect({ a, b, same }).toEqual({ a, b, same: pairwise(a, b) });
        expect({ a, b, same: isSameControllerId(a, b) }).toEqual({ a, b, same: pairwise(a, b) });
      }
    }
  });

  test("is undefined for what is not a DID", () => {
    expect(controllerIdentity("did:")).toBeUndefined();
    expect(controllerIdentity("   ")).toBeUndefined();
    expect(controllerIdentity("did:jwk:not-a-key")).toBeUndefined();
  });
});

describe("did:artifact", () => {
  const HELLO = "0xb94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";
  const EMPTY = "0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  /** SHA-256 of the JCS form of {"a":1,"b":2}. */
  const JSON_AB = "0x43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777";

  test("artifactDidFromDigest() encodes the spec vectors", () => {
    expect(artifactDidFromDigest(HELLO)).toBe("did:artifact:bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e");
    expect(artifactDidFromDigest(JSON_AB)).toBe("did:artifact:bafkreicdewgp66b744bw3csdam7ygcw7yyhmanzyerzvjcwhik4iqkjho4");
    expect(artifactDidFromDigest(EMPTY).length).toBe(72);
  });

  test("the spec example parses, though its digest is not the SHA-256 of empty input as the spec claims", () => {
    // Only the first 27 digest bytes agree with e3b0c442…b855; the example's tail was evidently made up.
    const example = "did:artifact:bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenpcqyaua";
    expect(value(parseArtifactDid(example)).digest).toBe("0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991af14300a0");
    expect(artifactDidFromDigest(EMPTY)).toBe("did:artifact:bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku");
  });

  test("artifactDidFromDigest() throws on a digest that is not 32 bytes (a caller bug)", () => {
    expect(() => artifactDidFromDigest("0x1234")).toThrow(TypeError);
  });

  test("parseArtifactDid() returns the digest and the DID exactly as given", () => {
    expect(value(parseArtifactDid(ARTIFACT_DID))).toEqual({
      did: ARTIFACT_DID,
      identifier: ARTIFACT_DID.slice("did:artifact:".length),
      digest: "0x34a6310c07e9845655ba294214ed10b9d5cc035af71981338a23789a8463272a",
    });
    expect(value(parseArtifactDid("did:artifact:bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e")).digest).toBe(HELLO);
    expect(value(parseArtifactDid(OTHER_ARTIFACT_DID)).digest).toStartWith("0x54a6310c");
  });

  test("the hello-world artifact has the reference DID address", () => {
    expect(value(didToAddress(artifactDidFromDigest(HELLO)))).toBe("0x7c72147f96497c2db5ab34a4bb18b454c3c71257");
  });

  test("parseArtifactDid() round-trips any digest", () => {
    for (let i = 0; i < 64; i++) {
      const digest = `0x${Array.from({ length: 32 }, (_, j) => ((i * 37 + j * 11) & 0xff).toString(16).padStart(2, "0")).join("")}` as const;
      expect(value(parseArtifactDid(artifactDidFromDigest(digest))).digest).toBe(digest);
    }
  });

  const cid = (bytes: number[]) => `did:artifact:b${base32LowerEncode(new Uint8Array(bytes))}`;
  const digest32 = Array.from({ length: 32 }, () => 7);
  const errors: [string, string][] = [
    ["did:web:example.com", "Expected a did:artifact DID"],
    ["DID:artifact:bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenpcqyaua", "Expected a did:artifact DID"],
    [" did:artifact:bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenpcqyaua", "Expected a did:artifact DID"],
    ["did:artifact:", "Missing method-specific identifier"],
    ["did:artifact:zQmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", 'Invalid multibase prefix "z", expected "b" (base32lower)'],
    ["did:artifact:BAFKREIHDWDCEFGH4DQKJV67UZCMW7OJEE6XEDZDETOJUZJEVTENPCQYAUA", 'Invalid multibase prefix "B", expected "b" (base32lower)'],
    ["did:artifact:bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenpcqyaub", "Failed to decode base32 CID: not canonical base32lower"],
    ["did:artifact:bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenpcqyau1", "Failed to decode base32 CID: not canonical base32lower"],
    ["did:artifact:bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi", "Multicodec must be raw (0x55), got 0x70"],
    [cid([0x00, 0x55, 0x12, 0x20, ...digest32]), "CID version must be 1, got 0"],
    [cid([0x01, 0x55, 0x13, 0x20, ...digest32]), "Multihash function must be sha2-256 (0x12), got 0x13"],
    [cid([0x01, 0x55, 0x12, 0x14, ...digest32.slice(0, 20)]), "SHA-256 digest must be 32 bytes, got 20"],
    [cid([0x01, 0x55, 0x12, 0x20, ...digest32.slice(0, 31)]), "SHA-256 digest must be 32 bytes, got 31"],
    [cid([0x01, 0x55, 0x12, 0x20, ...digest32, 0]), "SHA-256 digest must be 32 bytes, got 33"],
    [cid([0x01]), "Multicodec must be raw (0x55), got nothing"],
    // A varint not in its shortest form (81 00 for 1): the same content under a second DID, whose claims the
    // canonical DID's readers never saw.
    [cid([0x81, 0x00, 0x55, 0x12, 0x20, ...digest32]), "CID version must be 1, got nothing"],
    [cid([0x01, 0xd5, 0x00, 0x12, 0x20, ...digest32]), "Multicodec must be raw (0x55), got nothing"],
    [cid([0x01, 0x55, 0x92, 0x00, 0x20, ...digest32]), "Multihash function must be sha2-256 (0x12), got nothing"],
    [cid([0x01, 0x55, 0x12, 0xa0, 0x00, ...digest32]), "SHA-256 digest must be 32 bytes, got nothing"],
  ];
  for (const [did, message] of errors) {
    test(`parseArtifactDid() rejects ${did.length > 40 ? `${did.slice(0, 40)}…` : did}: ${message}`, () => {
      expect(failure(parseArtifactDid(did))).toEqual({ code: "INVALID_DID", message });
    });
  }
});

describe("base encodings", () => {
  test("base32 lower matches RFC 4648 vectors without padding", () => {
    const vectors: [string, string][] = [["", ""], ["f", "my"], ["fo", "mzxq"], ["foo", "mzxw6"], ["foob", "mzxw6yq"], ["fooba", "mzxw6ytb"], ["foobar", "mzxw6ytboi"]];
    for (const [plain, encoded] of vectors) {
      expect(base32LowerEncode(new TextEncoder().encode(plain))).toBe(encoded);
      expect(new TextDecoder().decode(base32LowerDecode(encoded))).toBe(plain);
    }
    expect(base32LowerDecode("m")).toBeUndefined();
    expect(base32LowerDecode("MZXW6")).toBeUndefined();
    expect(base32LowerDecode("mz")).toBeUndefined();
  });

  test("base64url matches RFC 4648 vectors without padding", () => {
    const vectors: [string, string][] = [["", ""], ["f", "Zg"], ["fo", "Zm8"], ["foo", "Zm9v"], ["foob", "Zm9vYg"], ["\u00ff\u00fe", "w7_Dvg"]];
    for (const [plain, encoded] of vectors) {
      expect(base64UrlEncode(new TextEncoder().encode(plain))).toBe(encoded);
      expect(new TextDecoder().decode(base64UrlDecode(encoded))).toBe(plain);
    }
    expect(base64UrlDecode("Z")).toBeUndefined();
    expect(base64UrlDecode("Zm+v")).toBeUndefined();
  });
});

describe("hostile input", () => {
  const hostile = [
    "",
    " ",
    "\t\n\r",
    "did:",
    "did::",
    "::::",
    "did:::",
    "#",
    "did:web:#",
    "did:web:.",
    "did:web:www.",
    "did:jwk:",
    "did:jwk:e30",
    "did:jwk:" + "A".repeat(10_000),
    "did:artifact:b" + "a".repeat(10_000),
    "🦄",
    "did:web:🦄.example",
    "did:pkh:eip155:1:🦄",
    "\u0000\u0001\u0007\u001b[31m",
    "did:web:exa\u0000mple.com",
    "\ud800",
    "did:handle:\ud83d:x",
    "x".repeat(10_000),
    "did:web:" + "a".repeat(10_000),
    ":".repeat(10_000),
    "#".repeat(10_000),
    "did:pkh:" + "a:".repeat(5_000),
    "__proto__",
    "did:__proto__:constructor",
  ];

  test("no DID function throws, and every failure is INVALID_DID", () => {
    for (const input of hostile) {
      const results: Result<unknown, string>[] = [
        normalizeDid(input),
        computeDidHash(input),
        didToAddress(input),
        didAddressFromHash(input),
        getDomainFromDidWeb(input),
        buildDidPkhFromCaip10(input),
        buildDidPkh(input, input, input),
        parseDidPkh(input),
        didPkhToCaip10(input),
        didJwkToJwk(input),
        parseArtifactDid(input),
        extractAddressFromDid(input),
      ];
      for (const result of results) if (!result.ok) expect(result.code).toBe("INVALID_DID");
      expect(typeof isSameControllerId(input, input)).toBe("boolean");
      expect(typeof validateDidAddress(input, input)).toBe("boolean");
    }
  });

  test("blank and structural nonsense is INVALID_DID", () => {
    for (const input of ["", " ", "\t\n\r", "did:", "did::", "did:::", "#", "did:web:#", "did:web:.", "did:jwk:", "did:jwk:e30"]) {
      expect(failure(normalizeDid(input)).code).toBe("INVALID_DID");
    }
  });

  test("a non-string from JavaScript is INVALID_DID, not a throw", () => {
    for (const input of [undefined, null, 42, {}, []] as unknown as string[]) {
      expect(failure(normalizeDid(input)).code).toBe("INVALID_DID");
      expect(failure(didAddressFromHash(input)).code).toBe("INVALID_DID");
      expect(failure(parseArtifactDid(input)).code).toBe("INVALID_DID");
      expect(failure(extractAddressFromDid(input)).code).toBe("INVALID_DID");
      expect(failure(buildDidPkhFromCaip10(input)).code).toBe("INVALID_DID");
    }
  });
});

describe("normalizeSubjectDid(): the one rule for a subject a caller names (issue 43)", () => {
  test("DIDs and bare domains are normalized as normalizeDid does", () => {
    for (const [input, expected] of [
      ["example.com", "did:web:example.com"],
      ["www.Example.COM", "did:web:example.com"],
      ["did:web:Shop.Example", "did:web:shop.example"],
      ["did:web:localhost%3A8443:user:alice", "did:web:localhost%3a8443:user:alice"],
      ["did:web:example.com#key-1", "did:web:example.com"],
      ["did:pkh:eip155:1:0xAbCdEf0000000000000000000000000000000001", "did:pkh:eip155:1:0xabcdef0000000000000000000000000000000001"],
      ["did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"],
      ["did:handle:github:Alice", "did:handle:github:Alice"],
      // Whitespace around it is trimmed, as normalizeDid always did.
      [" did:web:example.com", "did:web:example.com"],
      ["  www.Shop.ok \n", "did:web:shop.ok"],
      // One trailing dot and one www. are the reference's (and both at once).
      ["did:web:example.com.", "did:web:example.com"],
      ["did:web:www.example.com.", "did:web:example.com"],
    ] as const) {
      expect({ input, result: normalizeSubjectDid(input) }).toEqual({ input, result: { ok: true, value: expected } });
    }
  });

  test("whitespace or control characters anywhere, a did:web naming no domain, an empty or oversized input: INVALID_DID", () => {
    for (const input of [
      "did:web:not a did",
      "not a did",
      "did:web:exa\tmple.com",
      "did:web:a..b",
      "did:web:.example.com",
      "did:web:127.0.0.1",
      "did:web:",
      "did:web:exa\u00a0mple.com",
      "did:web:example.com\u0007",
      // Not their own normal form after one pass: second names for example.com whose evidence was matched apart.
      "did:web:example.com..",
      "did:web:www.www.example.com",
      "www.www.example.com",
      "did:web:WWW.www.Example.com.",
      "did:web:example.com:us er",
      "did:key:z6Mk\u0000",
      "did:pkh:eip155:1:0x12 34",
      "did:pkh:eip155:1",
      "did:",
      "",
      " \t ",
      `did:web:${"a".repeat(2_050)}.com`,
      undefined,
      42,
    ]) {
      const result = normalizeSubjectDid(input);
      expect({ input, ok: result.ok, code: result.ok ? undefined : result.code }).toEqual({ input, ok: false, code: "INVALID_DID" });
    }
  });

  test("an eip155 did:pkh names its chain in plain decimal and a 20-byte address; other namespaces stay as written", () => {
    const account = "0xabcdef0000000000000000000000000000000001";
    for (const [input, expected] of [
      [`did:pkh:eip155:1:${account}`, `did:pkh:eip155:1:${account}`],
      [`did:pkh:EIP155:66238:0xABCDEF0000000000000000000000000000000001`, `did:pkh:eip155:66238:${account}`],
      [`did:pkh:eip155:1:0XABCDEF0000000000000000000000000000000001`, `did:pkh:eip155:1:${account}`],
      [`did:pkh:eip155:1234567890123456:${account}`, `did:pkh:eip155:1234567890123456:${account}`],
      ["did:pkh:solana:4sGjMW1sUnHzSxGspuhpqLDx6wiyjNtZ:CKg5d12Jhpej1JqtmxLJgaFqqeYjxgPqToJ4LBdvG9Ev", "did:pkh:solana:4sGjMW1sUnHzSxGspuhpqLDx6wiyjNtZ:ckg5d12jhpej1jqtmxljgafqqeyjxgpqtoj4lbdvg9ev"],
    ] as const) {
      expect({ input, result: normalizeSubjectDid(input) }).toEqual({ input, result: { ok: true, value: expected } });
    }
    for (const input of [
      `did:pkh:eip155:01:${account}`, // second names for chain 1
      `did:pkh:eip155:0x1:${account}`,
      `did:pkh:eip155:1e0:${account}`,
      `did:pkh:eip155:0:${account}`,
      `did:pkh:eip155:12345678901234567:${account}`,
      `did:pkh:eip155:9007199254740993:${account}`, // rounds to 9007199254740992 as a number
      "did:pkh:eip155:1:0xabc", // not an address
      `did:pkh:eip155:1:${account}00`,
      "did:pkh:eip155:1:0xzzzzzz0000000000000000000000000000000001",
      `did:pkh:eip155:1:${account.slice(2)}`,
    ]) {
      const result = normalizeSubjectDid(input);
      expect({ input, ok: result.ok, code: result.ok ? undefined : result.code }).toEqual({ input, ok: false, code: "INVALID_DID" });
    }
  });
});

describe("recordSubjectDid(): what a record's payload subject names", () => {
  test("the fragment is cut before the one subject rule; what it gives is always a subject a caller can name", () => {
    expect(recordSubjectDid("did:web:Shop.Example#\tkey-1")).toBe("did:web:shop.example");
    expect(recordSubjectDid("shop.example#\u0000")).toBe("did:web:shop.example");
    expect(normalizeSubjectDid("did:web:shop.example#\tkey-1").ok).toBe(false);
    for (const subject of ["did:web:shop.example\u0000", "did:web:shop.example?x=1", "did:web:www.www.shop.example", "did:pkh:eip155:01:0x00000000000000000000000000000000000000c0", "", 7]) {
      expect({ subject, named: recordSubjectDid(subject) }).toEqual({ subject, named: undefined });
    }
    const hostile = ["did:web:x.example#\u00a0", " did:web:X.example.\t", "did:web:x.example\t#y", "did:key:z6Mk#\n", "did:web:x.example:u#%00", "x.example..#"];
    for (const subject of hostile) {
      const named = recordSubjectDid(subject);
      if (named !== undefined) expect({ subject, again: normalizeSubjectDid(named) }).toEqual({ subject, again: { ok: true, value: named } });
    }
  });
});

describe("normalizeSubjectDid(): the length is that of the DID it gives", () => {
  test("a bare domain with a path that becomes a did:web over 2,048 characters is refused, and every subject it gives is one a record can name", () => {
    const bare = `example.com:${"a".repeat(2_036)}`;
    expect(bare.length).toBe(2_048);
    // It was accepted as did:web:… of 2,056 characters, which no record names (recordSubjectDid): listed and counted 0.
    expect(normalizeSubjectDid(bare)).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(normalizeSubjectDid(bare.slice(0, -8))).toEqual({ ok: true, value: `did:web:${bare.slice(0, -8)}` });
    const inputs = [bare, bare.slice(0, -8), "did:web:Shop.Example#x", "shop.example.", "did:web:x.example:u%3Av", "did:handle:X:Y", "did:key:z6MkShop", "did:pkh:eip155:1:0x00000000000000000000000000000000000000C0"];
    for (const input of inputs) {
      const named = normalizeSubjectDid(input);
      if (named.ok) expect({ input, named: recordSubjectDid(named.value) }).toEqual({ input, named: named.value });
    }
  });
});

describe("did:web: one trailing dot of the host, wherever the host ends", () => {
  test("a dot before the port or a colon path is the host's: one DID and one DID address per host (decisions §3)", () => {
    const same: Array<[string, string]> = [
      ["did:web:alias.test.%3A8443", "did:web:alias.test%3a8443"],
      ["did:web:WWW.Alias.Test.%3a8443", "did:web:alias.test%3a8443"],
      ["alias.test.%3A8443", "did:web:alias.test%3a8443"],
      ["did:web:alias.test.:user:Alice", "did:web:alias.test:user:alice"],
      ["did:web:alias.test.:user/Docs", "did:web:alias.test:user/Docs"],
      // The reference's own dot at the end of the whole text goes as before.
      ["did:web:alias.test.:user.", "did:web:alias.test:user"],
    ];
    for (const [alias, canonical] of same) {
      expect({ alias, normalized: value(normalizeDid(alias)) }).toEqual({ alias, normalized: canonical });
      expect({ alias, subject: normalizeSubjectDid(alias) }).toEqual({ alias, subject: { ok: true, value: canonical } });
      expect({ alias, address: value(didToAddress(alias)) }).toEqual({ alias, address: value(didToAddress(canonical)) });
    }
    // Before, `did:web:alias.test.%3a8443` was its own normal form, with its own address, located at `alias.test.`.
    expect(didWebLocation("did:web:alias.test.%3a8443")).toBeUndefined();
    expect(didWebLocation("did:web:alias.test.:user")).toBeUndefined();
    expect(didWebLocation("did:web:alias.test%3a8443")).toEqual({ host: "alias.test", port: "8443", path: [] });
    // A second dot is not dropped: the subject is refused, never a third name for the host.
    for (const input of ["did:web:alias.test..%3A8443", "did:web:alias.test..:user"]) {
      expect({ input, code: (normalizeSubjectDid(input) as { code?: string }).code }).toEqual({ input, code: "INVALID_DID" });
    }
  });
});
