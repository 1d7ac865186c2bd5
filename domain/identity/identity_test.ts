import { describe, expect, test } from "bun:test";
import { didWebLocation, jwkToDidJwk, normalizeSubjectDid } from "../did/mod.ts";
import { displayTextProblem } from "../display_text.ts";
import { type IdentityRecord, resolveIdentities, resolveIdentity, truncateMiddle } from "./identity.ts";

const ADDR = "0x1111111111111111111111111111111111111111";
const TYPES = new Set(["did-web", "did-pkh", "did-key", "did-handle", "did-ethr", "did-jwk", "address", "unknown"]);
const SOURCES = new Set(["did-web", "did-pkh", "did-handle", "did-key", "did-ethr", "did-jwk", "caip10", "address", "raw"]);
const TEST_JWK = {
  kty: "EC",
  crv: "P-256",
  x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4",
  y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
};

describe("truncateMiddle()", () => {
  test("keeps a value no longer than head + tail + 3", () => {
    expect(truncateMiddle("0123456789abc", 6, 4)).toBe("0123456789abc");
    expect(truncateMiddle("", 6, 4)).toBe("");
  });

  test("joins head, three dots and tail", () => {
    expect(truncateMiddle("0xAbc0000000000000000000000000000000001234", 6, 4)).toBe("0xAbc0...1234");
    expect(truncateMiddle("0123456789abcd", 6, 4)).toBe("012345...abcd");
    expect(truncateMiddle("0123456789", 2, 0)).toBe("01...");
  });

  test("never cuts an emoji in half", () => {
    expect(truncateMiddle("🦄".repeat(20), 2, 2)).toBe("🦄🦄...🦄🦄");
  });

  test("cuts as a split into code points would, lone surrogates included", () => {
    const bySplit = (value: string, head: number, tail: number) => {
      const chars = Array.from(value);
      if (chars.length <= head + tail + 3) return value;
      return `${chars.slice(0, head).join("")}...${tail > 0 ? chars.slice(-tail).join("") : ""}`;
    };
    const pieces = ["a", "🦄", "\ud800", "\udc00", "é", "\u0301"];
    let seed = 11;
    for (let n = 0; n < 2_000; n++) {
      let value = "";
      const length = (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 40;
      for (let i = 0; i < length; i++) value += pieces[(seed = (seed * 1103515245 + 12345) % 2 ** 31) % pieces.length];
      for (const [head, tail] of [[6, 4], [18, 8], [2, 0], [0, 3]] as const) {
        expect({ value, head, tail, label: truncateMiddle(value, head, tail) }).toEqual({ value, head, tail, label: bySplit(value, head, tail) });
      }
    }
  });
});

describe("resolveIdentity()", () => {
  test("trims an address and checksums it", () => {
    expect(resolveIdentity(`  ${ADDR}  `)).toEqual({
      input: ADDR,
      canonical: ADDR,
      label: "0x1111...1111",
      type: "address",
      source: "address",
    });
    expect(resolveIdentity("0xabc0000000000000000000000000000000001234")).toEqual({
      input: "0xabc0000000000000000000000000000000001234",
      canonical: "0xAbc0000000000000000000000000000000001234",
      label: "0xAbc0...1234",
      type: "address",
      source: "address",
    });
  });

  test("resolves a mixed-case address with a bad checksum as unknown/raw instead of failing", () => {
    const bad = "0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5EB";
    expect(resolveIdentity(bad)).toEqual({ input: bad, canonical: bad, label: "0x6f05D46cD048d324...69BCD5EB", type: "unknown", source: "raw" });
  });

  test("accepts a correctly checksummed and an upper-case address", () => {
    expect(resolveIdentity("0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5eb").type).toBe("address");
    expect(resolveIdentity("0x6F05D46CD048D3249F4DB6BAD6D06E2069BCD5EB").canonical).toBe("0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5eb");
  });

  test("turns a CAIP-10 account id into a did:pkh", () => {
    expect(resolveIdentity(`eip155:66238:${ADDR.toUpperCase().replace("0X", "0x")}`)).toEqual({
      input: `eip155:66238:${ADDR.toUpperCase().replace("0X", "0x")}`,
      canonical: `did:pkh:eip155:66238:${ADDR}`,
      label: "0x1111...1111",
      type: "did-pkh",
      source: "caip10",
    });
  });

  test("labels a did:web with its host only", () => {
    expect(resolveIdentity("did:web:example.com")).toEqual({
      input: "did:web:example.com",
      canonical: "did:web:example.com",
      label: "example.com",
      type: "did-web",
      source: "did-web",
    });
    expect(resolveIdentity("did:web:WWW.Example.com/Users/Alice#key-1")).toMatchObject({
      canonical: "did:web:example.com/Users/Alice",
      label: "example.com",
    });
  });

  test("labels a did:pkh with its lowercase address", () => {
    expect(resolveIdentity(`did:pkh:EIP155:1:${"0xABCDEF0000000000000000000000000000001234"}`)).toEqual({
      input: "did:pkh:EIP155:1:0xABCDEF0000000000000000000000000000001234",
      canonical: "did:pkh:eip155:1:0xabcdef0000000000000000000000000000001234",
      label: "0xabcd...1234",
      type: "did-pkh",
      source: "did-pkh",
    });
  });

  test("labels a did:handle as username (platform)", () => {
    expect(resolveIdentity("did:handle:github:octocat")).toEqual({
      input: "did:handle:github:octocat",
      canonical: "did:handle:github:octocat",
      label: "octocat (github)",
      type: "did-handle",
      source: "did-handle",
    });
    expect(resolveIdentity("did:handle:GitHub:OctoCat").label).toBe("OctoCat (github)");
  });

  test("shortens a long did:key", () => {
    const did = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";
    const record = resolveIdentity(did);
    expect(record).toEqual({ input: did, canonical: did, label: "did:key:z6MkhaXg...EGta2doK", type: "did-key", source: "did-key" });
    expect(record.label).toContain("...");
  });

  test("labels a did:ethr with its checksummed address and keeps its case", () => {
    expect(resolveIdentity("did:ethr:0x6f05d46cd048d3249f4db6bad6d06e2069bcd5eb")).toEqual({
      input: "did:ethr:0x6f05d46cd048d3249f4db6bad6d06e2069bcd5eb",
      canonical: "did:ethr:0x6f05d46cd048d3249f4db6bad6d06e2069bcd5eb",
      label: "0x6f05...D5eb",
      type: "did-ethr",
      source: "did-ethr",
    });
  });

  test("resolves a did:ethr with a bad address as unknown/raw", () => {
    expect(resolveIdentity("did:ethr:0xabc")).toEqual({ input: "did:ethr:0xabc", canonical: "did:ethr:0xabc", label: "did:ethr:0xabc", type: "unknown", source: "raw" });
  });

  test("gives did:jwk its own type with a middle-truncated label", () => {
    const did = jwkToDidJwk(TEST_JWK);
    if (!did.ok) throw new Error(did.message);
    const record = resolveIdentity(`${did.value}#0`);
    expect(record).toEqual({
      input: `${did.value}#0`,
      canonical: did.value,
      label: `${did.value.slice(0, 18)}...${did.value.slice(-8)}`,
      type: "did-jwk",
      source: "did-jwk",
    });
  });

  test("resolves an invalid did:jwk as unknown/raw", () => {
    expect(resolveIdentity("did:jwk:e30")).toMatchObject({ canonical: "did:jwk:e30", type: "unknown", source: "raw" });
  });

  test("resolves other methods as unknown/raw", () => {
    expect(resolveIdentity("did:example:something-unusual")).toEqual({
      input: "did:example:something-unusual",
      canonical: "did:example:something-unusual",
      label: "did:example:something-unusual",
      type: "unknown",
      source: "raw",
    });
    expect(resolveIdentity("did:example:something-more-unusual").label).toBe("did:example:someth...-unusual");
    expect(resolveIdentity("did:artifact:bafkreibuuyyqyb7jqrlflorjiiko2efz2xgagwxxdgathcrdpcniiyzhfi").type).toBe("unknown");
  });

  test("treats a bare word as a did:web, as the reference does", () => {
    expect(resolveIdentity("garbage")).toEqual({ input: "garbage", canonical: "did:web:garbage", label: "garbage", type: "did-web", source: "did-web" });
  });

  test("keeps the untrimmed input of a blank identifier", () => {
    expect(resolveIdentity("   ")).toEqual({ input: "   ", canonical: "", label: "Unknown", type: "unknown", source: "raw" });
    expect(resolveIdentity("")).toEqual({ input: "", canonical: "", label: "Unknown", type: "unknown", source: "raw" });
  });

  test("resolves hostile inputs without throwing", () => {
    const hostile = ["not a did at all", "did:", "did:pkh:", "eip155::", "0xshort", "::::", "did:web:", "\u0000\u0001\u001b", "did:web:#", "EIP155:1:0xabc"];
    for (const input of hostile) expectWellFormed(input, resolveIdentity(input));
    expect(resolveIdentity("did:")).toEqual({ input: "did:", canonical: "did:", label: "did:", type: "unknown", source: "raw" });
    expect(resolveIdentity("did:pkh:")).toMatchObject({ type: "unknown", source: "raw" });
    // `did:web:::::` names no domain (didWebLocation): no did:web.
    expect(resolveIdentity("::::")).toEqual({ input: "::::", canonical: "::::", label: "::::", type: "unknown", source: "raw" });
  });

  test("resolves a did:web the subject rule refuses (no domain: bidi controls, homoglyphs, an IP host) as unknown/raw", () => {
    // Shown as a host these read as another name: `paypal.com` (a right-to-left override), `pаypal.com` (Cyrillic а).
    expect(resolveIdentity("did:web:\u202emoc.lapyap")).toEqual({
      input: "did:web:\u202emoc.lapyap",
      canonical: "did:web:\u202emoc.lapyap",
      label: "Unknown",
      type: "unknown",
      source: "raw",
    });
    expect(resolveIdentity("did:web:p\u0430ypal.com")).toEqual({
      input: "did:web:p\u0430ypal.com",
      canonical: "did:web:p\u0430ypal.com",
      label: "did:web:p\u0430ypal.com",
      type: "unknown",
      source: "raw",
    });
    const refused = ["did:web:paypal.com\u200b.evil.test", "did:web:evil.test/\u202e", "did:web:127.0.0.1", "p\u0430ypal.com", "did:web:example.com%3A443", "did:web:ex%61mple.com"];
    for (const did of refused) {
      expect({ did, subject: normalizeSubjectDid(did).ok, type: resolveIdentity(did).type }).toEqual({ did, subject: false, type: "unknown" });
    }
    // The punycode a browser shows for the Cyrillic name is a domain, and stays a did:web labelled as written.
    expect(resolveIdentity("did:web:xn--pypal-4ve.com")).toMatchObject({ label: "xn--pypal-4ve.com", type: "did-web" });
  });

  test("labels \"Unknown\" what may not be shown (control and bidirectional control characters), keeping the type", () => {
    // `\u202enimda (x)` reads `admin (x)`.
    expect(resolveIdentity("did:handle:x:\u202enimda")).toEqual({
      input: "did:handle:x:\u202enimda",
      canonical: "did:handle:x:\u202enimda",
      label: "Unknown",
      type: "did-handle",
      source: "did-handle",
    });
    expect(resolveIdentity("did:handle:twitter:a\u2066b").label).toBe("Unknown");
    expect(resolveIdentity("did:handle:twitter:a\u0007b").label).toBe("Unknown");
    expect(resolveIdentity("did:pkh:eip155:1:0x\u202e")).toMatchObject({ label: "Unknown", type: "did-pkh" });
    expect(resolveIdentity("did:example:\u202eelpmaxe")).toMatchObject({ canonical: "did:example:\u202eelpmaxe", label: "Unknown", type: "unknown" });
    // Format characters print as nothing: `pay\u200bpal (x)` read `paypal (x)`.
    for (const invisible of ["\u200b", "\u00ad", "\u200e", "\u2060", "\ufeff", "\u{e0041}"]) {
      expect(resolveIdentity(`did:handle:x:pay${invisible}pal`)).toMatchObject({ label: "Unknown", type: "did-handle" });
    }
    expect(resolveIdentity("did:handle:x:paypal").label).toBe("paypal (x)");
    // Right-to-left text is no control: a name in Arabic or Hebrew is shown as written.
    expect(resolveIdentity("did:handle:x:\u05e2\u05d1\u05e8\u05d9\u05ea").label).toBe("\u05e2\u05d1\u05e8\u05d9\u05ea (x)");
  });

  test("never throws for a non-string from JavaScript", () => {
    const odd = [undefined, null, 42, {}, [], Symbol("s"), { toString: () => { throw new Error("boom"); } }] as unknown as string[];
    for (const input of odd) {
      const record = resolveIdentity(input);
      expect(TYPES.has(record.type)).toBe(true);
    }
  });
});

describe("resolveIdentities()", () => {
  test("keeps order and length", () => {
    const inputs = ["did:web:example.com", ADDR, "", "did:handle:github:octocat"];
    expect(resolveIdentities(inputs).map((r) => r.type)).toEqual(["did-web", "address", "unknown", "did-handle"]);
    expect(resolveIdentities([])).toEqual([]);
  });
});

function expectWellFormed(input: string, record: IdentityRecord) {
  expect(typeof record.input).toBe("string");
  expect(typeof record.canonical).toBe("string");
  expect(typeof record.label).toBe("string");
  expect(TYPES.has(record.type)).toBe(true);
  expect(SOURCES.has(record.source)).toBe(true);
  if (input.trim() === "") {
    expect(record).toEqual({ input, canonical: "", label: "Unknown", type: "unknown", source: "raw" });
    return;
  }
  expect(record.input).toBe(input.trim());
  expect(record.canonical.length).toBeGreaterThan(0);
  expect(record.label.length).toBeGreaterThan(0);
  expect(displayTextProblem("label", record.label)).toBeUndefined();
  if (record.type === "did-web") expect(didWebLocation(record.canonical)).toBeDefined();
  // A label is never longer than what it labels plus an ellipsis: identifiers stay displayable.
  expect(Array.from(record.label).length).toBeLessThanOrEqual(Math.max(Array.from(record.canonical).length, 27) + 3);
  if (record.type === "address") expect(record.canonical).toMatch(/^0x[0-9a-fA-F]{40}$/);
  if (record.type.startsWith("did-")) expect(record.canonical.startsWith(`did:${record.type.slice(4)}:`)).toBe(true);
}

describe("resolveIdentity() fuzz", () => {
  // A seeded generator keeps failures reproducible.
  function mulberry32(seed: number) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  const PREFIXES = ["", "", "did:", "did:web:", "did:pkh:", "did:pkh:eip155:1:", "did:handle:", "did:key:", "did:jwk:", "did:ethr:", "did:artifact:b", "eip155:", "eip155:1:", "0x", "www.", " ", "#", "DID:WEB:"];
  const ALPHABETS = ["abcdefABCDEF0123456789", ":/#.%-_ ", "\u0000\u0001\u0007\n\r\t\u001b\u007f\u200b\ufeff", "🦄é中\u0301\ud800\udc00"];

  function randomString(rand: () => number): string {
    let s = PREFIXES[Math.floor(rand() * PREFIXES.length)] ?? "";
    const length = rand() < 0.02 ? 5_000 + Math.floor(rand() * 5_000) : Math.floor(rand() * 60);
    for (let i = 0; i < length; i++) {
      const roll = rand();
      if (roll < 0.1) s += String.fromCharCode(Math.floor(rand() * 0x10000));
      else if (roll < 0.12 && s.length < 100) s += `0x${"0123456789abcdefABCDEF"[Math.floor(rand() * 22)]?.repeat(40)}`;
      else {
        const alphabet = ALPHABETS[Math.floor(rand() * ALPHABETS.length)] ?? "";
        s += alphabet[Math.floor(rand() * alphabet.length)] ?? "";
      }
    }
    return s;
  }

  test("3000 random strings resolve to well-formed records without throwing", () => {
    const rand = mulberry32(0xa75);
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const input = randomString(rand);
      const record = resolveIdentity(input);
      expectWellFormed(input, record);
      seen.add(record.type);
    }
    // The generator reaches most branches.
    expect(seen.size).toBeGreaterThanOrEqual(5);
  });
});
