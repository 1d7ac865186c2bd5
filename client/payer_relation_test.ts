import { describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { OMA_TRUST_PROOF_DOMAIN, OMA_TRUST_PROOF_TYPES } from "../domain/artifact_trust/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { payerRelation } from "./review_chain.ts";

const CHAIN_ID = 66238;
const SCHEMA = `0x${"cd".repeat(32)}` as Hex;
const payer = privateKeyToAccount(generatePrivateKey());
const reviewer = privateKeyToAccount(generatePrivateKey());
const pkhOf = (address: string) => `did:pkh:eip155:${CHAIN_ID}:${address.toLowerCase()}`;

/** A pop-eip712 proof by the payer (shared-control) authorizing `entity`. */
async function proofFor(entity: string): Promise<string> {
  const domain = { ...OMA_TRUST_PROOF_DOMAIN, chainId: 1 };
  const message = {
    signer: payer.address,
    authorizedEntity: entity,
    signingPurpose: "shared-control",
    creationTimestamp: 1n,
    expirationTimestamp: 0n,
    randomValue: `0x${"11".repeat(32)}` as Hex,
    statement: "a link",
  };
  const signature = await payer.signTypedData({ domain, types: OMA_TRUST_PROOF_TYPES, primaryType: "OmaTrustProof", message });
  return JSON.stringify({ proofType: "pop-eip712", proofPurpose: "shared-control", proofObject: { domain, message: { ...message, creationTimestamp: "1", expirationTimestamp: "0" }, signature } });
}

/** The reviewer's live linked-identifier about `subject` naming the payer, carrying `proof`, as the chain reader finds it. */
function chainWith(subject: string, proof: string) {
  const data = encodeSchemaData(findSchemaByName("linked-identifier")!.schema, {
    subject,
    linkedId: `did:pkh:eip155:1:${payer.address.toLowerCase()}`,
    proofs: [proof],
    issuedAt: 1,
    effectiveAt: 0,
    expiresAt: 0,
  });
  if (!data.ok) throw new Error(data.message);
  const link = {
    uid: `0x${"ab".repeat(32)}`, schema: SCHEMA, time: 2n, expirationTime: 0n, revocationTime: 0n, refUID: `0x${"00".repeat(32)}`,
    recipient: `0x${"00".repeat(20)}`, attester: reviewer.address, revocable: true, data: data.value, position: 1n,
  };
  return { uid: () => SCHEMA, find: () => Promise.resolve([link]) } as never;
}
const relation = (chain: never) => payerRelation(payer.address, reviewer.address, { rpc: "http://unused.invalid", chainId: CHAIN_ID, chain });

describe("payerRelation()", () => {
  test("linked: the reviewer's link to its own did:pkh with the payer's proof naming the reviewer", async () => {
    expect(await relation(chainWith(pkhOf(reviewer.address), await proofFor(pkhOf(reviewer.address))))).toBe("linked");
  });

  test("a proof the payer signed for another entity, copied into the reviewer's link, links nothing", async () => {
    // Proofs sit on chain for anyone to copy: this one the payer made for its own site.
    expect(await relation(chainWith(pkhOf(reviewer.address), await proofFor("did:web:payer.example")))).toBe("unrelated");
  });

  test("a link about another subject than the reviewer's own did:pkh links nothing", async () => {
    expect(await relation(chainWith("did:web:elsewhere.example", await proofFor("did:web:elsewhere.example")))).toBe("unrelated");
  });
});
