import { describe, expect, test } from "bun:test";
import type { HexString } from "../../ports/eas.ts";
import type { OwnershipChain, OwnershipTransaction } from "../../ports/ownership_chain.ts";
import { fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import { createDiscoverControllers, type DiscoverControllers } from "../discovery/mod.ts";
import { createSubjectOwnership, OWNERSHIP_TRANSFERRED_TOPIC } from "./subject_ownership.ts";

const WALLET = "0x00000000000000000000000000000000000000aa" as HexString;
const OTHER = "0x00000000000000000000000000000000000000bb" as HexString;
const CONTRACT = "0x00000000000000000000000000000000000000cc" as HexString;
const pkh = (a: string, chain = 31337) => `did:pkh:eip155:${chain}:${a}`;
const TX = `0x${"1".repeat(64)}` as HexString;

function setup(options: { owner?: HexString | null; tx?: OwnershipTransaction | null; down?: boolean; discovery?: Awaited<ReturnType<DiscoverControllers>> } = {}) {
  const chain: OwnershipChain = {
    chainId: 31337,
    hasCode: (a) => Promise.resolve(options.down ? { ok: false, reason: "rpc-error" } : { ok: true, value: a === CONTRACT }),
    owner: () => Promise.resolve(options.down ? { ok: false, reason: "rpc-error" } : { ok: true, value: options.owner === undefined ? WALLET : options.owner }),
    transaction: () => Promise.resolve(options.down ? { ok: false, reason: "rpc-error" } : { ok: true, value: options.tx ?? null }),
  };
  const discover: DiscoverControllers = () => Promise.resolve(options.discovery ?? { ok: false, code: "INVALID_DID", message: "x" } as never);
  return createSubjectOwnership({ discover, chain });
}

describe("createSubjectOwnership()", () => {
  test("the wallet itself and a contract it owns are verified; another chain or an account without code fails", async () => {
    expect(await setup()({ subjectDid: pkh(WALLET, 1), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { method: "wallet" } });
    expect(await setup()({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { ok: true, method: "contract" } });
    expect(await setup()({ subjectDid: pkh(CONTRACT, 1), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { ok: false, status: "failed" } });
    expect(await setup()({ subjectDid: pkh(OTHER), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { ok: false } });
  });

  test("several chains (decisions §30): a contract is read on its own chain; a chain not read is not checked, never verified", async () => {
    const reads: number[] = [];
    const on = (chainId: number): OwnershipChain => ({
      chainId,
      hasCode: (a) => (reads.push(chainId), Promise.resolve({ ok: true, value: a === CONTRACT })),
      owner: () => Promise.resolve({ ok: true, value: WALLET }),
      transaction: () => Promise.resolve({ ok: true, value: null }),
    });
    const chains = { chainIds: [31337, 31339], ownership: (id: number) => (id === 31337 || id === 31339 ? on(id) : undefined) };
    const discover: DiscoverControllers = () => Promise.resolve({ ok: false, code: "INVALID_DID", message: "x" } as never);
    const verify = createSubjectOwnership({ discover, chain: on(31337), chains });
    expect(await verify({ subjectDid: pkh(CONTRACT, 31339), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { ok: true, method: "contract" } });
    expect(reads).toEqual([31339]);
    expect(await verify({ subjectDid: pkh(CONTRACT, 8453), connectedWalletDid: pkh(WALLET) })).toMatchObject({
      ok: true,
      value: { ok: false, status: "failed", error: "The subject is on another chain", details: "Contract subjects are proven on eip155:31337, eip155:31339 only" },
    });
    expect(reads).toEqual([31339]);
  });

  test("creation and transfer transactions: verified for the wallet, failed for another; a transfer that moved on fails", async () => {
    const created = { from: WALLET, contractAddress: CONTRACT, logs: [] };
    for (const owner of [null, WALLET]) {
      expect(await setup({ owner, tx: created })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
        .toMatchObject({ value: { ok: true, method: "minting-wallet" } });
    }
    // Created by the wallet, then transferred or sold: its creation proves nothing any more.
    expect(await setup({ owner: OTHER, tx: created })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
      .toMatchObject({ value: { ok: false, method: "minting-wallet", error: `The wallet created the contract, but its owner() is now ${OTHER}` } });
    expect(await setup({ owner: OTHER, tx: { ...created, from: OTHER } })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
      .toMatchObject({ value: { ok: false, method: "minting-wallet" } });
    const transfer = { from: OTHER, contractAddress: null, logs: [{ address: CONTRACT, topics: [OWNERSHIP_TRANSFERRED_TOPIC, `0x${"0".repeat(24)}${OTHER.slice(2)}`, `0x${"0".repeat(24)}${WALLET.slice(2)}`] as HexString[] }] };
    expect(await setup({ owner: WALLET, tx: transfer })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
      .toMatchObject({ value: { ok: true, method: "transfer" } });
    expect(await setup({ owner: OTHER, tx: transfer })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
      .toMatchObject({ value: { ok: false, method: "transfer" } });
  });

  test("a lookup that cannot be made is NETWORK_ERROR; bad input is INVALID_DID / INVALID_INPUT", async () => {
    expect(await setup({ down: true })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(await setup()({ subjectDid: "nope:", connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await setup()({ subjectDid: pkh(CONTRACT), connectedWalletDid: "did:web:a.test" })).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await setup()({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: "0x1" })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });
});

/** A discovery answer for did:web:shop.test with the given controller keys and evidence statuses. */
function discovered(keys: { canonicalId: string; sources: ("dns-txt" | "did-json")[] }[], statuses: { dns?: "found" | "not-found" | "unavailable"; did?: "found" | "not-found" | "unavailable" } = {}) {
  return {
    ok: true as const,
    value: {
      subject: {} as never,
      domain: "shop.test",
      controllerKeys: keys.map((k) => ({ id: k.canonicalId, canonicalId: k.canonicalId, label: "", sources: k.sources, basic: true })),
      evidence: [
        { kind: "dns-txt" as const, status: statuses.dns ?? "not-found", location: "_controllers.shop.test", keys: [] },
        { kind: "did-json" as const, status: statuses.did ?? "not-found", location: "https://shop.test/.well-known/did.json", keys: [] },
      ],
      warnings: [],
    },
  };
}

describe("createSubjectOwnership() for did:web", () => {
  const web = (discovery: Awaited<ReturnType<DiscoverControllers>>, wallet = pkh(WALLET)) =>
    setup({ discovery })({ subjectDid: "www.Shop.test", connectedWalletDid: wallet });

  test("the wallet in DNS TXT is dns, in did.json only is did-document; any eip155 chain of the wallet counts", async () => {
    expect(await web(discovered([{ canonicalId: pkh(WALLET), sources: ["dns-txt", "did-json"] }], { dns: "found", did: "found" }))).toEqual({
      ok: true,
      value: { ok: true, status: "verified", subjectDid: "did:web:shop.test", connectedWalletDid: pkh(WALLET), method: "dns", controllingWalletDid: pkh(WALLET) },
    });
    expect(await web(discovered([{ canonicalId: pkh(WALLET, 1), sources: ["did-json"] }], { did: "found" }))).toMatchObject({ value: { ok: true, method: "did-document" } });
  });

  test("another wallet fails with the TXT record to publish", async () => {
    const answer = await web(discovered([{ canonicalId: pkh(OTHER), sources: ["dns-txt"] }], { dns: "found" }));
    expect(answer).toMatchObject({ ok: true, value: { ok: false, status: "failed", error: "The wallet is not a controller of the subject" } });
    expect(answer.ok && answer.value.details).toContain(`_controllers.shop.test reading "v=1;controller=${pkh(WALLET)}"`);
    expect(answer.ok && answer.value.details).toContain("https://shop.test/.well-known/did.json");
  });

  test("an unavailable source without the wallet is NETWORK_ERROR, never failed; the wallet found beside one is verified", async () => {
    expect(await web(discovered([], { dns: "unavailable" }))).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(await web(discovered([], { did: "unavailable" }))).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(await web(discovered([{ canonicalId: pkh(WALLET), sources: ["dns-txt"] }], { dns: "found", did: "unavailable" }))).toMatchObject({ value: { ok: true, method: "dns" } });
  });

  test("a did.json read and unusable for good (not JSON, a redirect) is the subject's: failed, not NETWORK_ERROR", async () => {
    for (const reason of ["invalid-json", "redirect"] as const) {
      const discover = createDiscoverControllers({
        dns: fakeDnsResolver(),
        didDocuments: fakeDidDocumentFetcher({ "shop.test": { status: "unavailable", reason, url: "https://shop.test/.well-known/did.json" } }),
        serviceDnsLabel: "omatrust",
      });
      const answer = await createSubjectOwnership({ discover, chain: {} as OwnershipChain })({ subjectDid: "did:web:shop.test", connectedWalletDid: pkh(WALLET) });
      expect({ reason, answer }).toMatchObject({ reason, answer: { ok: true, value: { ok: false, status: "failed" } } });
    }
  });

  test("a domain over its lookup budget is NETWORK_ERROR; a did:web discovery refuses is INVALID_DID", async () => {
    expect(await web({ ok: false, code: "RATE_LIMITED", message: "x", retryAfterSeconds: 5 })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(await web({ ok: false, code: "INVALID_DID", message: "x" })).toMatchObject({ ok: false, code: "INVALID_DID" });
  });
});

describe("createSubjectOwnership() for a did:web whose host is an IP address (issue 33)", () => {
  test("is INVALID_DID (400, bad input), never NETWORK_ERROR, with the real discovery and the did.json fetcher's refusal of IP hosts", async () => {
    const dns = fakeDnsResolver();
    // As adapters/https does: an IP literal is never fetched, it is an unavailable source ("invalid-host").
    const didDocuments = fakeDidDocumentFetcher();
    const fetchDidDocument = didDocuments.fetchDidDocument;
    didDocuments.fetchDidDocument = (host: string, path: readonly string[] = []) =>
      /^[0-9.]+(:[0-9]+)?$/.test(host) ? (didDocuments.fetches.push(host), Promise.resolve({ status: "unavailable" as const, reason: "invalid-host" as const, url: `https://${host}/.well-known/did.json` })) : fetchDidDocument(host, path);
    const verify = createSubjectOwnership({ discover: createDiscoverControllers({ dns, didDocuments, serviceDnsLabel: "omatrust" }), chain: {} as OwnershipChain });
    for (const subjectDid of ["did:web:127.0.0.1", "did:web:0", "did:web:1.2.3", "did:web:2130706433", "did:web:%5B%3A%3A1%5D", "10.1.2.3"]) {
      expect({ subjectDid, answer: await verify({ subjectDid, connectedWalletDid: pkh(WALLET) }) })
        .toEqual({ subjectDid, answer: { ok: false, code: "INVALID_DID", message: "subjectDid is not a did:web this service can look up" } });
    }
    expect([...dns.lookups, ...didDocuments.fetches]).toEqual([]);
    // A domain name still reaches discovery.
    expect(await verify({ subjectDid: "did:web:shop.test", connectedWalletDid: pkh(WALLET) })).toMatchObject({ ok: true, value: { ok: false, status: "failed" } });
    expect(dns.lookups).toEqual(["TXT _controllers.shop.test", "TXT _omatrust.shop.test"]);
  });
});

describe("createSubjectOwnership() for did:pkh, the remaining failures", () => {
  test("a non-eip155 did:pkh or another method fails saying what can be proven", async () => {
    expect(await setup()({ subjectDid: "did:pkh:solana:abc:xyz", connectedWalletDid: pkh(WALLET) })).toMatchObject({ value: { ok: false, error: "Only did:web and eip155 did:pkh subjects can be proven" } });
    expect(await setup()({ subjectDid: "did:key:z6Mk", connectedWalletDid: pkh(WALLET) })).toMatchObject({ value: { ok: false, status: "failed" } });
  });

  test("a contract without owner() fails; an unknown transaction fails; a transaction about something else falls back to owner()", async () => {
    expect(await setup({ owner: null })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET) })).toMatchObject({ value: { ok: false, method: "contract", error: "The wallet is not the contract's owner()" } });
    expect(await setup({ tx: null })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX })).toMatchObject({ value: { ok: false, error: "No such transaction on this chain" } });
    const unrelated = { from: WALLET, contractAddress: OTHER, logs: [] };
    expect(await setup({ tx: unrelated })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX })).toMatchObject({ value: { ok: true, method: "contract" } });
    expect(await setup({ owner: OTHER, tx: unrelated })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX })).toMatchObject({ value: { ok: false, method: "contract" } });
  });

  test("a transfer to another wallet, or an OwnershipTransferred from another contract, does not count", async () => {
    const to = (owner: HexString, from: HexString = CONTRACT) => ({
      from: OTHER,
      contractAddress: null,
      logs: [{ address: from, topics: [OWNERSHIP_TRANSFERRED_TOPIC, `0x${"0".repeat(24)}${WALLET.slice(2)}`, `0x${"0".repeat(24)}${owner.slice(2)}`] as HexString[] }],
    });
    expect(await setup({ owner: OTHER, tx: to(OTHER) })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX })).toMatchObject({ value: { ok: false, method: "contract" } });
    expect(await setup({ owner: OTHER, tx: to(WALLET, OTHER) })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX })).toMatchObject({ value: { ok: false, method: "contract" } });
  });

  test("the chain failing at owner() or at the transaction is NETWORK_ERROR", async () => {
    const chain = (failAt: "owner" | "transaction"): OwnershipChain => ({
      chainId: 31337,
      hasCode: () => Promise.resolve({ ok: true, value: true }),
      owner: () => Promise.resolve(failAt === "owner" ? { ok: false, reason: "rpc-error" } : { ok: true, value: OTHER }),
      transaction: () => Promise.resolve({ ok: false, reason: "rpc-error" }),
    });
    const discover: DiscoverControllers = () => Promise.reject(new Error("not used"));
    for (const failAt of ["owner", "transaction"] as const) {
      expect(await createSubjectOwnership({ discover, chain: chain(failAt) })({ subjectDid: pkh(CONTRACT), connectedWalletDid: pkh(WALLET), txHash: TX }))
        .toMatchObject({ ok: false, code: "NETWORK_ERROR", message: "The chain did not answer" });
    }
  });
});
