import { describe, expect, test } from "bun:test";
import type { EasReader, HexString } from "../../ports/eas.ts";
import type { ServedChain, ServedChains } from "../chains/mod.ts";
import { ok } from "../result.ts";
import type { DelegatedAttest } from "./delegated_attest.ts";
import { type ChainSet, createReadChainNonce, routeDelegatedAttest } from "./write_chains.ts";

const EAS_A = "0x00000000000000000000000000000000000000aa";
const EAS_B = "0x00000000000000000000000000000000000000bb";
const A: ServedChain = { chainId: 31337, caip2: "eip155:31337", role: "attestations", easContract: EAS_A };
const B: ServedChain = { chainId: 31338, caip2: "eip155:31338", role: "attestations", easContract: EAS_B };
const P: ServedChain = { chainId: 31339, caip2: "eip155:31339", role: "proofs" };
const served: ServedChains = { default: A, list: [A, B, P] };
const ATTESTER = "0x1111111111111111111111111111111111111111";

/** A body as the client prepares it, for `domain`; `typedData` false: only delegatedRequest names the chain. */
function body(domain?: { chainId: unknown; verifyingContract: unknown }, typedData = true) {
  const request: Record<string, unknown> = { schema: `0x${"ab".repeat(32)}`, deadline: "9999999999" };
  if (domain !== undefined && !typedData) Object.assign(request, { chainId: domain.chainId, easContractAddress: domain.verifyingContract });
  return {
    attester: ATTESTER,
    signature: `0x${"11".repeat(65)}`,
    prepared: { delegatedRequest: request, ...(domain !== undefined && typedData ? { typedData: { domain, message: {} } } : {}) },
  };
}

/** Each chain's relay, counting what it was given. */
function relays() {
  const seen: number[] = [];
  const relay = (chainId: number): DelegatedAttest => {
    const attest: DelegatedAttest = (_body) => {
      seen.push(chainId);
      return Promise.resolve(ok({ txHash: "0x01" as HexString, uid: null, blockNumber: 1n }));
    };
    attest.batch = (bodies) => {
      seen.push(chainId);
      return Promise.resolve({ txHash: "0x01" as HexString, blockNumber: 1n, results: bodies.map(() => ok({ txHash: "0x01" as HexString, uid: null, blockNumber: 1n })) });
    };
    return attest;
  };
  const set: ChainSet<DelegatedAttest> = {
    served,
    byChain: new Map([[A.chainId, { chain: A, name: "A", value: relay(A.chainId) }], [B.chainId, { chain: B, name: "B", value: relay(B.chainId) }]]),
  };
  return { seen, routed: routeDelegatedAttest(set) };
}

describe("writes on several chains (decisions §30)", () => {
  test("a write goes to the chain its typed data's domain names, else delegatedRequest's, else the default; the answer names the chain", async () => {
    const { seen, routed } = relays();
    const onB = await routed(body({ chainId: 31338, verifyingContract: EAS_B.toUpperCase().replace("0X", "0x") }));
    expect(onB.ok && onB.value.chainName).toBe("B");
    await routed(body({ chainId: "31338", verifyingContract: EAS_B }, false));
    await routed(body());
    await routed(body({ chainId: 31337n, verifyingContract: EAS_A }));
    expect(seen).toEqual([31338, 31338, 31337, 31337]);
  });

  test("a chain not served, a proof chain, another EAS or no chain id is UNSUPPORTED_CHAIN, and no chain's relay runs", async () => {
    const { seen, routed } = relays();
    for (const domain of [
      { chainId: 1, verifyingContract: EAS_A },
      { chainId: 31339, verifyingContract: EAS_A },
      { chainId: 31338, verifyingContract: EAS_A },
      { chainId: undefined, verifyingContract: EAS_A },
      { chainId: 31337, verifyingContract: undefined },
    ]) {
      const refused = await routed(body(domain));
      expect(refused.ok ? "ok" : refused.code).toBe("UNSUPPORTED_CHAIN");
    }
    expect(seen).toEqual([]);
  });

  test("a body that does not read goes to the default chain's relay, which refuses it as before", async () => {
    const { seen, routed } = relays();
    await routed({ not: "a delegated body" });
    expect(seen).toEqual([31337]);
  });

  test("a batch holds one chain: two chains are refused whole naming both, an unserved one names its place; one chain goes to it", async () => {
    const { seen, routed } = relays();
    const mixed = routed.batchRefusal([body({ chainId: 31337, verifyingContract: EAS_A }), body({ chainId: 31338, verifyingContract: EAS_B })]);
    expect(mixed?.code).toBe("INVALID_INPUT");
    expect(mixed?.message).toContain("eip155:31337");
    expect(mixed?.message).toContain("eip155:31338");
    const unserved = routed.batchRefusal([body(), body({ chainId: 5, verifyingContract: EAS_A })]);
    expect([unserved?.code, unserved?.message.startsWith("requests[1]")]).toEqual(["UNSUPPORTED_CHAIN", true]);
    const refusedRun = await routed.batch!([body({ chainId: 31337, verifyingContract: EAS_A }), body({ chainId: 31338, verifyingContract: EAS_B })]);
    expect(refusedRun.txHash).toBeNull();
    expect(seen).toEqual([]);
    const onB = await routed.batch!([body({ chainId: 31338, verifyingContract: EAS_B }), { unreadable: true }]);
    expect(routed.batchRefusal([body({ chainId: 31338, verifyingContract: EAS_B })])).toBeUndefined();
    expect([seen, onB.chainName]).toEqual([[31338], "B"]);
  });

  test("chainNames name the chain a body or a batch goes to, before any relay runs (a 202's and a retry's chain)", () => {
    const { seen, routed } = relays();
    expect(routed.chainNames.write(body({ chainId: 31338, verifyingContract: EAS_B }))).toBe("B");
    expect(routed.chainNames.write(body())).toBe("A");
    expect(routed.chainNames.write(body({ chainId: 1, verifyingContract: EAS_A }))).toBeUndefined();
    expect(routed.chainNames.batch([body({ chainId: 31338, verifyingContract: EAS_B }), { unreadable: true }])).toBe("B");
    expect(routed.chainNames.batch([body({ chainId: 31338, verifyingContract: EAS_B }), body({ chainId: 31337, verifyingContract: EAS_A })])).toBeUndefined();
    expect(seen).toEqual([]);
  });
});

describe("the nonce per chain", () => {
  const reader = (chainId: number, nonce: bigint, reads: number[]): EasReader => ({
    chainId,
    easAddress: (chainId === A.chainId ? EAS_A : EAS_B) as HexString,
    getAttesterNonce: () => {
      reads.push(chainId);
      return Promise.resolve({ ok: true, nonce });
    },
  });

  test("chainId (decimal or CAIP-2) names the chain, absent the default; unserved or a proof chain UNSUPPORTED_CHAIN with no read", async () => {
    const reads: number[] = [];
    const readNonce = createReadChainNonce({
      served,
      byChain: new Map([[A.chainId, { chain: A, name: "A", value: reader(A.chainId, 3n, reads) }], [B.chainId, { chain: B, name: "B", value: reader(B.chainId, 7n, reads) }]]),
    });
    expect(await readNonce(ATTESTER)).toEqual(ok({ nonce: 3n, chainId: 31337, easAddress: EAS_A, chainName: "A" }));
    expect(await readNonce(ATTESTER, "eip155:31338")).toEqual(ok({ nonce: 7n, chainId: 31338, easAddress: EAS_B, chainName: "B" }));
    expect(reads).toEqual([31337, 31338]);
    for (const [chainId, code] of [["1", "UNSUPPORTED_CHAIN"], ["31339", "UNSUPPORTED_CHAIN"], ["base", "INVALID_INPUT"]] as const) {
      const refused = await readNonce(ATTESTER, chainId);
      expect(refused.ok ? "ok" : refused.code).toBe(code);
    }
    expect((await readNonce("nope")).ok).toBe(false);
    expect(reads).toEqual([31337, 31338]);
  });
});
