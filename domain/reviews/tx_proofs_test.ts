import { describe, expect, test } from "bun:test";
import { buildReviewData } from "./reviews.ts";
import {
  didPkhAddress,
  didPkhAddressOn,
  didPkhChainId,
  readTxProofObject,
  transactionProof,
  txProofChainReason,
  txProofReasons,
} from "./tx_proofs.ts";

const HASH = `0x${"ab".repeat(32)}` as const;
const REVIEWER = "0x1111111111111111111111111111111111111111";
const SERVICE = "0x2222222222222222222222222222222222222222";
const OTHER = "0x3333333333333333333333333333333333333333";
const proof = { chainId: 31337, txHash: HASH };
const mined = { from: REVIEWER, to: SERVICE, success: true, blockTime: 100n } as const;
const judge = (overrides: Partial<Parameters<typeof txProofReasons>[0]> = {}) =>
  txProofReasons({ proof, transaction: mined, senderRelation: "attester", targets: [SERVICE.toUpperCase().replace("0X", "0x")], reviewTime: 100n, ...overrides });

describe("readTxProofObject()", () => {
  test("reads the reference shape (CAIP-2 chainId) and a bare chain id; optional sender and contractAddress", () => {
    expect(readTxProofObject({ chainId: "eip155:31337", txHash: HASH.toUpperCase().replace("0X", "0x") })).toEqual({ ok: true, value: proof });
    expect(readTxProofObject({ chainId: 8453, txHash: HASH, sender: REVIEWER, contractAddress: SERVICE })).toEqual({
      ok: true,
      value: { chainId: 8453, txHash: HASH, sender: REVIEWER, contractAddress: SERVICE },
    });
  });

  test("refuses other namespaces, bad hashes and addresses, with the field named", () => {
    const cases: [unknown, string][] = [
      [null, "proofObject must be {chainId, txHash}"],
      [{ chainId: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", txHash: HASH }, "proofObject.chainId must be an EVM chain (eip155:<id>)"],
      [{ chainId: "eip155:0", txHash: HASH }, "proofObject.chainId must be an EVM chain (eip155:<id>)"],
      [{ chainId: 1, txHash: "0x1234" }, "proofObject.txHash must be 32 bytes of hex"],
      [{ chainId: 1, txHash: HASH, sender: "alice" }, "proofObject.sender must be an address"],
      [{ chainId: 1, txHash: HASH, contractAddress: 7 }, "proofObject.contractAddress must be an address"],
    ];
    for (const [input, message] of cases) {
      const read = readTxProofObject(input);
      expect(read.ok ? "ok" : read.message).toBe(message);
    }
  });

  test("buildReviewData() refuses a transaction proof it cannot read, and takes a did:pkh subject", () => {
    const draft = { subject: `did:pkh:eip155:31337:${SERVICE}`, ratingValue: 4 };
    const bad = buildReviewData({ ...draft, proofs: [{ proofType: "tx-interaction", proofPurpose: "commercial-tx", proofObject: { chainId: 1, txHash: "0x12" } }] });
    expect(bad.ok ? "ok" : bad.message).toBe("proofs: proofObject.txHash must be 32 bytes of hex");
    const good = buildReviewData({ ...draft, proofs: [{ proofType: "tx-encoded-value", proofPurpose: "commercial-tx", proofObject: { chainId: "eip155:31337", txHash: HASH } }] });
    expect(good.ok).toBe(true);
  });
});

describe("txProofReasons()", () => {
  test("a successful transaction by the reviewer (or a linked wallet) to a target, mined by the review, counts", () => {
    expect(judge()).toEqual([]);
    expect(judge({ senderRelation: "linked", transaction: { ...mined, from: OTHER } })).toEqual([]);
  });

  test("each failed check is named", () => {
    expect(judge({ transaction: undefined })).toEqual([`the transaction ${HASH} is not on eip155:31337`]);
    expect(judge({ transaction: { ...mined, success: false } })).toEqual(["the transaction reverted"]);
    expect(judge({ reviewTime: 99n })).toEqual(["the transaction was mined after the review"]);
    expect(judge({ senderRelation: "unrelated" })).toEqual(["the transaction was sent by someone other than the reviewer or a wallet it linked"]);
    expect(judge({ transaction: { ...mined, to: OTHER } })).toEqual([
      "the transaction went to an address that is neither the subject's contract nor named by its endpoint evidence",
    ]);
    expect(judge({ transaction: { ...mined, to: undefined } })).toEqual(["the transaction created a contract; it went to no subject"]);
    expect(judge({ proof: { ...proof, sender: OTHER } })).toEqual(["the proof's sender is not the transaction's sender"]);
    expect(judge({ proof: { ...proof, contractAddress: OTHER } })).toEqual(["the proof's contractAddress is not where the transaction went"]);
  });

  test("didPkhAddress() reads any EVM chain's did:pkh, with or without a fragment", () => {
    expect(didPkhAddress(`did:pkh:eip155:1:${SERVICE}#controller`)).toBe(SERVICE);
    expect(didPkhAddress("did:web:x.example")).toBeUndefined();
  });
});

describe("the chain rule: txProofChainReason()", () => {
  test("a did:pkh is reached on its own chain only; a did:web names no chain", () => {
    expect(txProofChainReason(`did:pkh:eip155:31337:${SERVICE}`, 31337)).toBeUndefined();
    expect(txProofChainReason(`did:pkh:eip155:1:${SERVICE}`, 31337)).toBe(`the transaction is on eip155:31337, not on did:pkh:eip155:1:${SERVICE}'s chain eip155:1`);
    expect(txProofChainReason(`did:pkh:eip155:1:${SERVICE}#controller`, 8453)).toBe(`the transaction is on eip155:8453, not on did:pkh:eip155:1:${SERVICE}'s chain eip155:1`);
    expect(txProofChainReason("did:web:api.example.com", 1)).toBeUndefined();
    expect(didPkhChainId(`did:pkh:eip155:8453:${SERVICE}`)).toBe(8453);
    expect(didPkhChainId("did:web:api.example.com")).toBeUndefined();
  });

  test("didPkhAddressOn() gives a did:pkh's address on its chain only", () => {
    expect(didPkhAddressOn(`did:pkh:eip155:31337:${SERVICE}`, 31337)).toBe(SERVICE);
    expect(didPkhAddressOn(`did:pkh:eip155:1:${SERVICE}`, 31337)).toBeUndefined();
    expect(didPkhAddressOn("did:web:api.example.com", 31337)).toBeUndefined();
  });

  test("buildReviewData() refuses a transaction proof on another chain than a did:pkh subject's, before anything is signed", () => {
    const proofs = [{ proofType: "tx-interaction", proofPurpose: "commercial-tx", proofObject: { chainId: "eip155:31337", txHash: HASH } }];
    const elsewhere = buildReviewData({ subject: `did:pkh:eip155:1:${SERVICE}`, ratingValue: 4, proofs });
    expect(elsewhere).toEqual({
      ok: false,
      code: "INVALID_INPUT",
      message: `proofs: the transaction is on eip155:31337, not on did:pkh:eip155:1:${SERVICE.toLowerCase()}'s chain eip155:1`,
    });
    expect(buildReviewData({ subject: `did:pkh:eip155:31337:${SERVICE}`, ratingValue: 4, proofs }).ok).toBe(true);
    // A did:web's chain is that of the addresses its endpoint evidence names, which only a reader can know.
    expect(buildReviewData({ subject: "did:web:api.example.com", ratingValue: 4, proofs }).ok).toBe(true);
  });
});

describe("transactionProof()", () => {
  const hash = `0x${"Ab".repeat(32)}`;
  test("a transaction becomes the proof readers check: CAIP-2 chain, lower-case hash, commercial-tx, tx-interaction by default", () => {
    const expected = { ok: true, value: { proofType: "tx-interaction", proofPurpose: "commercial-tx", proofObject: { chainId: "eip155:31337", txHash: hash.toLowerCase() } } };
    expect(transactionProof({ chainId: 31337, txHash: hash }) as unknown).toEqual(expected);
    expect(transactionProof({ chainId: "eip155:31337", txHash: hash }) as unknown).toEqual(expected);
    expect(transactionProof({ chainId: 1, txHash: hash, proofType: "tx-encoded-value" })).toMatchObject({ ok: true, value: { proofType: "tx-encoded-value", proofObject: { chainId: "eip155:1" } } });
    // What it builds, the review reads back.
    const built = transactionProof({ chainId: 31337, txHash: hash });
    expect((built.ok && readTxProofObject(built.value.proofObject)) as unknown).toEqual({ ok: true, value: { chainId: 31337, txHash: hash.toLowerCase() } });
  });

  test("refuses, naming the field, what is not a transaction", () => {
    expect(transactionProof({ chainId: 31337, txHash: "0x1234" })).toEqual({ ok: false, code: "INVALID_INPUT", message: "txHash must be 32 bytes of hex" });
    expect(transactionProof({ chainId: "solana:mainnet", txHash: hash })).toEqual({ ok: false, code: "INVALID_INPUT", message: "chainId must be an EVM chain (eip155:<id>)" });
    expect(transactionProof({ chainId: 0, txHash: hash })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(transactionProof({ chainId: 1, txHash: hash, proofType: "x402-receipt" as never })).toEqual({ ok: false, code: "INVALID_INPUT", message: "proofType must be one of tx-interaction, tx-encoded-value" });
  });
});
