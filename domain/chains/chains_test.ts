import { describe, expect, test } from "bun:test";
import { buildServedChains, chainAnswer, chainForTypedData, parseChainParam, readChainIds, resolveChain, singleChain } from "./mod.ts";

const EAS_A = "0xA1A1a1a1A1a1a1a1A1A1a1A1a1A1A1a1a1A1a1a1";
const EAS_B = "0xb2b2B2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
const ANCHORS = {
  chains: {
    "eip155:31337": { name: "A", easContract: EAS_A, schemas: {} },
    "eip155:31338": { name: "B", easContract: EAS_B, schemas: {} },
  },
};

const served = () => {
  const built = buildServedChains(
    [{ caip2: "eip155:31337", role: "attestations" }, { caip2: "eip155:31338", role: "attestations" }, { caip2: "eip155:8453", role: "proofs" }],
    ANCHORS,
  );
  if (!built.ok) throw new Error(built.message);
  return built.value;
};

describe("parseChainParam()", () => {
  test("reads CAIP-2 and decimal ids alike", () => {
    expect(parseChainParam("eip155:8453")).toBe(8453);
    expect(parseChainParam("8453")).toBe(8453);
  });
  test("refuses other namespaces, zero, signs, spaces and ids past 2^53", () => {
    for (const bad of ["", "solana:1", "eip155:", "0", "eip155:0", "-1", "+1", " 1", "0x1", "1e3", "99999999999999999"]) {
      expect({ bad, id: parseChainParam(bad) }).toEqual({ bad, id: undefined });
    }
  });
});

describe("buildServedChains()", () => {
  test("takes the EAS of each attestation chain from the anchors; the first attestation chain is the default", () => {
    const s = served();
    expect(s.default).toEqual({ chainId: 31337, caip2: "eip155:31337", role: "attestations", easContract: EAS_A.toLowerCase() });
    expect(s.list.map((c) => [c.caip2, c.role, c.easContract])).toEqual([
      ["eip155:31337", "attestations", EAS_A.toLowerCase()],
      ["eip155:31338", "attestations", EAS_B.toLowerCase()],
      ["eip155:8453", "proofs", undefined],
    ]);
    expect(readChainIds(s)).toEqual([31337, 31338, 8453]);
  });

  test("DEFAULT_CHAIN names another attestation chain; a proof chain or an unserved one stops the start", () => {
    const entries = [{ caip2: "eip155:8453", role: "proofs" as const }, { chainId: 31337, role: "attestations" as const }, { chainId: 31338, role: "attestations" as const }];
    const other = buildServedChains(entries, ANCHORS, { defaultChain: 31338 });
    expect(other.ok && other.value.default.chainId).toBe(31338);
    expect(buildServedChains(entries, ANCHORS).ok && served().default.chainId).toBe(31337);
    expect(buildServedChains(entries, ANCHORS, { defaultChain: 8453 })).toMatchObject({ ok: false, code: "INVALID_CHAINS", message: "DEFAULT_CHAIN eip155:8453 is not a served attestation chain" });
    expect(buildServedChains(entries, ANCHORS, { defaultChain: 1 })).toMatchObject({ ok: false, code: "INVALID_CHAINS" });
  });

  test("bad input stops the start with one line naming it", () => {
    const cases: [Parameters<typeof buildServedChains>[0], string][] = [
      [[{ caip2: "cosmos:hub", role: "attestations" }], "chain 1: caip2 must be eip155:<chain id>"],
      [[{ caip2: "eip155:31337", chainId: 5, role: "attestations" }], "chain 1: caip2 must be eip155:<chain id>"],
      [[{ caip2: "eip155:31337", role: "attestations" }, { chainId: 31337, role: "proofs" }], "eip155:31337 is named twice"],
      [[{ caip2: "eip155:8453", role: "proofs" }], "no chain has role attestations"],
      [[], "no chain has role attestations"],
      [[{ caip2: "eip155:10", role: "attestations" }], "eip155:10 is an attestation chain the trust anchors do not describe"],
      [[{ caip2: "eip155:10", role: "witness" as "proofs" }], "eip155:10: role must be attestations or proofs"],
    ];
    for (const [entries, message] of cases) {
      const built = buildServedChains(entries, ANCHORS);
      expect(built.ok ? "" : `${built.code}: ${built.message}`).toBe(`INVALID_CHAINS: ${message}`);
      expect(message.includes("\n")).toBe(false);
    }
  });

  test("singleChain() is today's deployment: one attestation chain, the default", () => {
    const s = singleChain(31337, EAS_A);
    expect(s.list).toEqual([s.default]);
    expect(s.default).toEqual({ chainId: 31337, caip2: "eip155:31337", role: "attestations", easContract: EAS_A.toLowerCase() });
  });
});

describe("resolveChain()", () => {
  test("absent is the default chain; CAIP-2 and decimal name the same chain", () => {
    const s = served();
    expect(resolveChain(undefined, s)).toEqual({ ok: true, value: s.default });
    expect(resolveChain("eip155:31338", s)).toEqual(resolveChain("31338", s));
    expect(resolveChain("31338", s)).toMatchObject({ ok: true, value: { chainId: 31338 } });
  });

  test("a chain not served is UNSUPPORTED_CHAIN; a malformed one INVALID_INPUT", () => {
    expect(resolveChain("1", served())).toEqual({ ok: false, code: "UNSUPPORTED_CHAIN", message: "Chain eip155:1 is not served by this deployment" });
    expect(resolveChain("mainnet", served())).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });

  test("a read of the index on a proof chain is UNSUPPORTED_CHAIN; a proof read there is answered", () => {
    expect(resolveChain("8453", served(), { role: "attestations" })).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN" });
    expect(resolveChain("8453", served())).toMatchObject({ ok: true, value: { role: "proofs" } });
  });
});

describe("chainAnswer()", () => {
  test("names chainId, caip2 and the EAS; a proof chain's EAS is null", () => {
    const s = served();
    expect(chainAnswer(s.default)).toEqual({ chainId: 31337, caip2: "eip155:31337", easContract: EAS_A.toLowerCase() });
    expect(chainAnswer(s.list[2]!)).toEqual({ chainId: 8453, caip2: "eip155:8453", easContract: null });
  });
});

describe("chainForTypedData()", () => {
  test("the signed domain chooses the chain: a served attestation chain and its EAS, in any case and number form", () => {
    const s = served();
    expect(chainForTypedData({ chainId: 31338, verifyingContract: EAS_B }, s)).toMatchObject({ ok: true, value: { chainId: 31338 } });
    expect(chainForTypedData({ chainId: 31337n, verifyingContract: EAS_A.toUpperCase().replace("0X", "0x") }, s)).toMatchObject({ ok: true, value: { chainId: 31337 } });
    expect(chainForTypedData({ chainId: "31337", verifyingContract: EAS_A }, s)).toMatchObject({ ok: true, value: { chainId: 31337 } });
  });

  test("another chain's EAS, a proof chain, an unserved chain or no chain id is UNSUPPORTED_CHAIN", () => {
    const s = served();
    for (const domain of [
      { chainId: 31337, verifyingContract: EAS_B },
      { chainId: 8453, verifyingContract: EAS_A },
      { chainId: 1, verifyingContract: EAS_A },
      { verifyingContract: EAS_A },
      { chainId: 31337 },
      { chainId: -1, verifyingContract: EAS_A },
    ]) {
      expect(chainForTypedData(domain, s)).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN" });
    }
  });
});
