import { beforeEach, describe, expect, test } from "bun:test";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { AtsClientError, isAtsClientError } from "./errors.ts";
import {
  clearTrustAnchorsCache,
  DEFAULT_TRUST_ANCHORS_URL,
  extractAllowlists,
  fetchTrustAnchors,
  getChainAnchors,
  getSchemaAnchor,
  isApprovedIssuer,
  TRUST_ANCHORS_CACHE_TTL_MS,
} from "./trust_anchors.ts";

const TESTNET_EAS = "0x8835AF90f1537777F52E482C8630cE4e947eCa32";
const MAINNET_EAS = "0x00Bd6f0Ee99bD76273B57e6dDEc5B00850c6b76C";
const WITNESS_UID = "0x" + "a1".repeat(32);
const REVIEW_UID = "0x" + "b2".repeat(32);
const MAINNET_ISSUER = "0x96fa5ab5E519641bD8A840A6b26D17DB7497618b";
const TESTNET_ISSUER = "0x6f05D46cD048d3249F4Db6BAd6d06e2069BCD5eb";
const REVOKED_ISSUER = "0x7D5beD223Bc343F114Aa28961Cc447dbbc9c2330";
const DATED_ISSUER = "0x766910dc543034ce7a6525c1307c5b6fe92ebb0b";
const COMPROMISED_ISSUER = "0x2222222222222222222222222222222222222222";

const ANCHORS: TrustAnchors = {
  version: 1,
  updatedAt: "2026-05-04T00:00:00Z",
  widgetOrigins: [],
  chains: {
    "eip155:66238": { name: "OMAChain Testnet", easContract: TESTNET_EAS, schemas: { "controller-witness": WITNESS_UID, "user-review": REVIEW_UID } },
    "eip155:6623": {
      name: "OMAChain Mainnet",
      easContract: MAINNET_EAS,
      schemas: { "controller-witness": WITNESS_UID.toUpperCase().replace("0X", "0x"), "user-review": REVIEW_UID },
    },
  },
  registries: [
    {
      type: "approved-issuers",
      issuers: [
        { address: MAINNET_ISSUER, label: "OMA3 Mainnet Attestation Wallet", schemas: ["controller-witness"], status: "active", validFrom: "2026-05-01T00:00:00Z" },
        { address: TESTNET_ISSUER, label: "OMA3 Testnet Attestation Wallet", schemas: ["controller-witness"] },
        { address: REVOKED_ISSUER, label: "Revoked", schemas: ["controller-witness"], status: "revoked" },
        {
          address: DATED_ISSUER,
          label: "Retired later",
          schemas: ["controller-witness"],
          status: "active",
          validFrom: "2026-05-01T00:00:00Z",
          revokedAt: "2026-06-01T00:00:00Z",
        },
        {
          address: COMPROMISED_ISSUER,
          label: "Compromised",
          schemas: ["controller-witness"],
          status: "revoked",
          validFrom: "2026-05-01T00:00:00Z",
          revokedAt: "2026-06-01T00:00:00Z",
        },
      ],
    },
  ],
};

type Call = { url: string; init: RequestInit | undefined };

function fakeFetch(respond: (call: Call) => Response | Promise<Response>) {
  const calls: Call[] = [];
  const fetch = (url: string, init?: RequestInit) => {
    const call = { url, init };
    calls.push(call);
    return Promise.resolve(respond(call));
  };
  return { fetch, calls };
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

async function rejection(promise: Promise<unknown>): Promise<AtsClientError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AtsClientError) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

function thrown(fn: () => unknown): AtsClientError {
  try {
    fn();
  } catch (error) {
    if (error instanceof AtsClientError) return error;
    throw error;
  }
  throw new Error("expected a throw");
}

beforeEach(() => clearTrustAnchorsCache());

describe("fetchTrustAnchors()", () => {
  test("fetches the local service by default", async () => {
    const { fetch, calls } = fakeFetch(() => json(ANCHORS));
    expect(await fetchTrustAnchors({ fetch })).toEqual(ANCHORS);
    expect(calls.map((c) => c.url)).toEqual([DEFAULT_TRUST_ANCHORS_URL]);
    expect(DEFAULT_TRUST_ANCHORS_URL).toBe("http://127.0.0.1:8080/v1/trust-anchors");
    expect(calls[0]?.init?.method).toBe("GET");
  });

  test("reuses a record for five minutes, then fetches again", async () => {
    let now = 1_000_000;
    const { fetch, calls } = fakeFetch(() => json(ANCHORS));
    const options = { url: "https://anchors.test/v1/trust-anchors", fetch, now: () => now };
    await fetchTrustAnchors(options);
    now += TRUST_ANCHORS_CACHE_TTL_MS - 1;
    await fetchTrustAnchors(options);
    expect(calls.length).toBe(1);
    now += 1;
    await fetchTrustAnchors(options);
    expect(calls.length).toBe(2);
    expect(TRUST_ANCHORS_CACHE_TTL_MS).toBe(300_000);
  });

  test("caches per URL", async () => {
    const { fetch, calls } = fakeFetch(() => json(ANCHORS));
    await fetchTrustAnchors({ url: "https://a.test/anchors", fetch });
    await fetchTrustAnchors({ url: "https://b.test/anchors", fetch });
    await fetchTrustAnchors({ url: "https://a.test/anchors", fetch });
    expect(calls.map((c) => c.url)).toEqual(["https://a.test/anchors", "https://b.test/anchors"]);
  });

  test("shares one request between concurrent callers", async () => {
    const { fetch, calls } = fakeFetch(() => json(ANCHORS));
    const [a, b] = await Promise.all([fetchTrustAnchors({ fetch }), fetchTrustAnchors({ fetch })]);
    expect(a).toEqual(ANCHORS);
    expect(b).toEqual(ANCHORS);
    expect(calls.length).toBe(1);
  });

  test("clearTrustAnchorsCache() forces a new request", async () => {
    const { fetch, calls } = fakeFetch(() => json(ANCHORS));
    await fetchTrustAnchors({ fetch });
    clearTrustAnchorsCache();
    await fetchTrustAnchors({ fetch });
    expect(calls.length).toBe(2);
  });

  test("rejects a payload without a truthy version or an object chains, and does not cache it", async () => {
    for (const body of [{ chains: {} }, { version: 0, chains: {} }, { version: 1 }, { version: 1, chains: [] }, { version: 1, chains: null }, [], "text", null]) {
      clearTrustAnchorsCache();
      const { fetch, calls } = fakeFetch(() => json(body));
      const error = await rejection(fetchTrustAnchors({ fetch }));
      expect(error.code).toBe("INVALID_INPUT");
      expect(error.message).toBe("Invalid trust anchors format");
      await rejection(fetchTrustAnchors({ fetch }));
      expect(calls.length).toBe(2);
    }
  });

  test("accepts any payload with a truthy version and an object chains, as the SDK does", async () => {
    const { fetch } = fakeFetch(() => json({ version: 2, chains: {} }));
    expect((await fetchTrustAnchors({ fetch })).version).toBe(2);
  });

  test("rejects a body that is not JSON as INVALID_INPUT", async () => {
    const { fetch } = fakeFetch(() => new Response("<html>", { status: 200 }));
    const error = await rejection(fetchTrustAnchors({ fetch }));
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.body).toBe("<html>");
  });

  test("turns a non-2xx answer into NETWORK_ERROR with status and body", async () => {
    const { fetch, calls } = fakeFetch(() => json({ error: "Method not allowed", code: "METHOD_NOT_ALLOWED" }, 503));
    const error = await rejection(fetchTrustAnchors({ fetch }));
    expect(error).toBeInstanceOf(AtsClientError);
    expect(error.name).toBe("AtsClientError");
    expect(error.code).toBe("NETWORK_ERROR");
    expect(error.status).toBe(503);
    expect(error.body).toEqual({ error: "Method not allowed", code: "METHOD_NOT_ALLOWED" });
    await rejection(fetchTrustAnchors({ fetch }));
    expect(calls.length).toBe(2);
  });

  test("turns a failed request into NETWORK_ERROR and keeps the cause", async () => {
    const cause = new TypeError("connection refused");
    const fetch = () => Promise.reject(cause);
    const error = await rejection(fetchTrustAnchors({ fetch }));
    expect(error.code).toBe("NETWORK_ERROR");
    expect(error.status).toBeUndefined();
    expect(error.cause).toBe(cause);
    expect(isAtsClientError(error, "NETWORK_ERROR")).toBe(true);
    expect(isAtsClientError(error, "INVALID_INPUT")).toBe(false);
  });
});

describe("getChainAnchors()", () => {
  test("finds a chain by chain id, numeric string or CAIP-2 id", () => {
    expect(getChainAnchors(ANCHORS, 66238).easContract).toBe(TESTNET_EAS);
    expect(getChainAnchors(ANCHORS, "66238").easContract).toBe(TESTNET_EAS);
    expect(getChainAnchors(ANCHORS, "eip155:6623").easContract).toBe(MAINNET_EAS);
  });

  test("also finds a chain in an older record keyed by bare chain id", () => {
    const legacy = { ...ANCHORS, chains: { "66238": ANCHORS.chains["eip155:66238"] } } as unknown as TrustAnchors;
    expect(getChainAnchors(legacy, 66238).name).toBe("OMAChain Testnet");
  });

  test("throws UNSUPPORTED_CHAIN for an unknown chain", () => {
    for (const chain of [1, "eip155:1", "toString", "__proto__", "constructor", ""]) {
      const error = thrown(() => getChainAnchors(ANCHORS, chain));
      expect(error.code).toBe("UNSUPPORTED_CHAIN");
      expect(error.message).toBe(`Chain ${chain} is not in the trust anchors`);
    }
  });
});

describe("getSchemaAnchor()", () => {
  test("returns the schema UID of a chain", () => {
    expect(getSchemaAnchor(ANCHORS, 66238, "user-review")).toBe(REVIEW_UID);
    expect(getSchemaAnchor(ANCHORS, "eip155:66238", "controller-witness")).toBe(WITNESS_UID);
  });

  test("throws INVALID_INPUT for a schema the chain does not anchor", () => {
    for (const name of ["certification", "toString", "__proto__"]) {
      const error = thrown(() => getSchemaAnchor(ANCHORS, 66238, name));
      expect(error.code).toBe("INVALID_INPUT");
      expect(error.message).toBe(`Schema ${name} is not anchored on chain 66238`);
    }
  });

  test("throws UNSUPPORTED_CHAIN for an unknown chain", () => {
    expect(thrown(() => getSchemaAnchor(ANCHORS, 1, "user-review")).code).toBe("UNSUPPORTED_CHAIN");
  });
});

describe("extractAllowlists()", () => {
  test("returns every EAS contract and schema UID once", () => {
    expect(extractAllowlists(ANCHORS)).toEqual({ allowedContracts: [TESTNET_EAS, MAINNET_EAS], allowedSchemas: [WITNESS_UID, REVIEW_UID] });
  });

  test("dedupes a contract shared by two chains", () => {
    const shared = {
      ...ANCHORS,
      chains: { a: { name: "A", easContract: TESTNET_EAS, schemas: {} }, b: { name: "B", easContract: TESTNET_EAS.toLowerCase(), schemas: {} } },
    };
    expect(extractAllowlists(shared)).toEqual({ allowedContracts: [TESTNET_EAS], allowedSchemas: [] });
  });
});

describe("isApprovedIssuer()", () => {
  const may = new Date("2026-05-15T00:00:00Z");

  test("approves a listed active issuer for its schema, without regard to case or form", () => {
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER, "controller-witness", may)).toBe(true);
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER.toLowerCase(), "controller-witness", may)).toBe(true);
    expect(isApprovedIssuer(ANCHORS, `did:pkh:eip155:66238:${MAINNET_ISSUER}`, "controller-witness", may)).toBe(true);
    expect(isApprovedIssuer(ANCHORS, `did:ethr:${MAINNET_ISSUER}`, "controller-witness", may)).toBe(true);
  });

  test("approves an issuer listed as an eip155 did:pkh on the chain it names only (decisions §30)", () => {
    const SAFE = "0x5afe5afe5afe5afe5afe5afe5afe5afe5afe5afe";
    const anchors = {
      ...ANCHORS,
      registries: [{
        type: "approved-issuers",
        issuers: [{ address: `did:pkh:eip155:10:${SAFE}`, label: "A Safe on chain 10", schemas: ["controller-witness"], status: "active" }],
      }],
    } as unknown as TrustAnchors;
    expect(isApprovedIssuer(anchors, SAFE, "controller-witness", may, 10)).toBe(true);
    expect(isApprovedIssuer(anchors, `did:pkh:eip155:10:${SAFE}`, "controller-witness", may)).toBe(true);
    // The same address attesting on another chain may be someone else's contract.
    expect(isApprovedIssuer(anchors, SAFE, "controller-witness", may, 1)).toBe(false);
    expect(isApprovedIssuer(anchors, `did:pkh:eip155:1:${SAFE}`, "controller-witness", may)).toBe(false);
    expect(isApprovedIssuer(anchors, `did:pkh:eip155:10:${SAFE}`, "controller-witness", may, 1)).toBe(false);
    expect(isApprovedIssuer(anchors, SAFE, "controller-witness", may, -1)).toBe(false);
    // A bare address (the reference's form) is approved on every chain.
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER, "controller-witness", may, 1)).toBe(true);
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER, "controller-witness", may, 31338)).toBe(true);
  });

  test("treats an issuer without status or dates as active", () => {
    expect(isApprovedIssuer(ANCHORS, TESTNET_ISSUER, "controller-witness", may)).toBe(true);
  });

  test("refuses other schemas and unlisted addresses", () => {
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER, "user-review", may)).toBe(false);
    expect(isApprovedIssuer(ANCHORS, "0x1111111111111111111111111111111111111111", "controller-witness", may)).toBe(false);
    expect(isApprovedIssuer(ANCHORS, "", "controller-witness", may)).toBe(false);
  });

  test("honours validFrom", () => {
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER, "controller-witness", new Date("2026-04-30T23:59:59Z"))).toBe(false);
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER, "controller-witness", new Date("2026-05-01T00:00:00Z"))).toBe(true);
  });

  test("refuses a revoked issuer without a date at any time", () => {
    expect(isApprovedIssuer(ANCHORS, REVOKED_ISSUER, "controller-witness", may)).toBe(false);
    expect(isApprovedIssuer(ANCHORS, REVOKED_ISSUER, "controller-witness", new Date("2020-01-01T00:00:00Z"))).toBe(false);
  });

  test("approves an active issuer with revokedAt only before revokedAt", () => {
    expect(isApprovedIssuer(ANCHORS, DATED_ISSUER, "controller-witness", may)).toBe(true);
    expect(isApprovedIssuer(ANCHORS, DATED_ISSUER, "controller-witness", new Date("2026-06-01T00:00:00Z"))).toBe(false);
  });

  test("refuses an issuer marked revoked even before its revokedAt", () => {
    // Before, approved in May: a revokedAt still ahead let a revoked (compromised) issuer count.
    expect(isApprovedIssuer(ANCHORS, COMPROMISED_ISSUER, "controller-witness", may)).toBe(false);
    expect(isApprovedIssuer(ANCHORS, COMPROMISED_ISSUER, "controller-witness", new Date("2026-06-01T00:00:00Z"))).toBe(false);
  });

  test("defaults to now", () => {
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER, "controller-witness")).toBe(true);
    expect(isApprovedIssuer(ANCHORS, DATED_ISSUER, "controller-witness")).toBe(Date.now() < Date.parse("2026-06-01T00:00:00Z"));
  });

  test("fails closed on unreadable dates, unknown statuses and odd records", () => {
    const odd = {
      ...ANCHORS,
      registries: [
        { type: "approved-issuers", issuers: [{ address: MAINNET_ISSUER, label: "x", schemas: ["a"], validFrom: "not a date" }] },
        { type: "approved-issuers", issuers: [{ address: MAINNET_ISSUER, label: "x", schemas: ["b"], status: "paused" }] },
        { type: "other", issuers: [{ address: MAINNET_ISSUER, label: "x", schemas: ["c"] }] },
        { type: "approved-issuers", issuers: null },
        null,
      ],
    } as unknown as TrustAnchors;
    for (const schema of ["a", "b", "c"]) expect(isApprovedIssuer(odd, MAINNET_ISSUER, schema, may)).toBe(false);
    expect(isApprovedIssuer(ANCHORS, MAINNET_ISSUER, "controller-witness", new Date(Number.NaN))).toBe(false);
    expect(isApprovedIssuer({ ...ANCHORS, registries: undefined } as unknown as TrustAnchors, MAINNET_ISSUER, "controller-witness", may)).toBe(false);
  });

  test("matches an issuer listed by DID", () => {
    const byDid = {
      ...ANCHORS,
      registries: [{ type: "approved-issuers", issuers: [{ address: "did:web:issuer.example", label: "x", schemas: ["user-review"] }] }],
    } as TrustAnchors;
    expect(isApprovedIssuer(byDid, "did:web:Issuer.example", "user-review", may)).toBe(true);
    expect(isApprovedIssuer(byDid, "did:web:other.example", "user-review", may)).toBe(false);
  });
});
