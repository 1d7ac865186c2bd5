/**
 * Controller authorization of a did:pkh contract subject (issue 38, decisions §25), against the real service over
 * loopback on Anvil with the real EAS contracts: a key binding whose transfer proof (`proofTxHash`, or a
 * `tx-interaction` proof's `proofObject.txHash`) is a real `transferOwnership` to the controller anchors the window;
 * live `contract-ownership` evidence from the contract's `owner()`; proofs that are not a transfer to the controller
 * (another contract's, the creation, a reverted call by a non-owner, a hash never mined); a transfer mined after the
 * binding; ownership moving on; a revocation closing the window; and the JSON-RPC calls each answer costs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createWalletClient, encodeFunctionData, type Hex, http, keccak256, parseAbi, stringToHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { afterChainSecond } from "./support/chain_clock.ts";
import { easWriter } from "./support/eas_writer.ts";
import { ownedContract } from "./support/owned_contract.ts";
import { startStack, type Stack } from "./harness.ts";

const BINDING = findSchemaByName("key-binding")!;
const CLAIM = findSchemaByName("responsibility-claim")!;
const TRANSFER_ABI = parseAbi(["function transferOwnership(address to)"]);
/** A transaction hash no chain has. */
const NEVER_MINED = `0x${"ab".repeat(32)}` as Hex;

let stack: Stack;
let writer: ReturnType<typeof easWriter>;
/** A deploys the contracts; C is the controller they move to; D takes one over from C. */
let A: Hex, C: Hex, D: Hex;
const address = (key: Hex) => privateKeyToAccount(key).address.toLowerCase() as Hex;
const pkh = (a: string) => `did:pkh:eip155:${stack.service.chainId}:${a.toLowerCase()}`;

beforeAll(async () => {
  stack = await startStack({
    env: {
      KEY_STATUS_RATE_PER_MINUTE: "100000",
      // Every lookup computed, not served from the whole-answer cache: the calls counted are the lookup's own.
      INDEX_ANSWER_CACHE_MB: "0",
      // owner() kept for the whole file, however slow the machine: what is counted never depends on the clock.
      DISCOVERY_CACHE_SECONDS: "3600",
    },
  });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress as Hex });
  [A, C, D] = stack.devnet.keys.users.slice(0, 3) as [Hex, Hex, Hex];
  // The chain's two schema strings, read once per process (§21), before anything is counted: a subject on another
  // chain, which has no contract to read.
  expect((await fetch(`${stack.baseUrl}/v1/controller-authorization?subjectDid=did:pkh:eip155:1:${address(A)}&controllerDid=${pkh(address(C))}`)).status).toBe(200);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

const wallet = (key: Hex) => createWalletClient({ account: privateKeyToAccount(key), transport: http(stack.devnet.rpcUrl) });
/** Deploys an Ownable contract from `key` (its owner). */
async function deploy(key: Hex): Promise<{ contract: Hex; creationTx: Hex }> {
  const { abi, bytecode } = await ownedContract();
  const creationTx = await wallet(key).deployContract({ abi, bytecode, chain: null });
  const receipt = await writer.client.waitForTransactionReceipt({ hash: creationTx });
  return { contract: receipt.contractAddress!.toLowerCase() as Hex, creationTx };
}
/** `transferOwnership(to)` sent by `key`; with `gas` given it is mined even when it reverts. */
async function transfer(key: Hex, contract: Hex, to: Hex, gas?: bigint): Promise<{ hash: Hex; status: string; blockNumber: bigint }> {
  const hash = await wallet(key).sendTransaction({
    to: contract,
    data: encodeFunctionData({ abi: TRANSFER_ABI, functionName: "transferOwnership", args: [to] }),
    chain: null,
    ...(gas === undefined ? {} : { gas }),
  });
  const receipt = await writer.client.waitForTransactionReceipt({ hash });
  return { hash, status: receipt.status, blockNumber: receipt.blockNumber };
}
/** A key binding of the contract, written by `key`, naming `keyId`, with these proofs. */
async function bind(key: Hex, contract: Hex, keyId: string, proofs: readonly object[]) {
  const bound = await writer.attest(key, stack.devnet.schemaUids["key-binding"] as Hex, {
    // The EAS recipient is the subject's DID address (decisions §3), not the contract's own address.
    recipient: (didToAddress(pkh(contract)) as { value: Hex }).value,
    data: (encodeSchemaData(BINDING.schema, {
      subject: pkh(contract),
      keyId,
      publicKeyJwk: "",
      keyPurpose: ["authentication", "assertionMethod"],
      proofs: proofs.map((p) => JSON.stringify(p)),
      issuedAt: 0n,
      effectiveAt: 0n,
      expiresAt: 0n,
    }) as { value: Hex }).value,
    revocable: true,
  });
  return { uid: bound.uid, time: await blockTime(bound.blockNumber) };
}
const blockTime = async (blockNumber: bigint) => (await writer.client.getBlock({ blockNumber })).timestamp;
/** Waits until the chain's clock is past `seconds`, so the next block is later (e2e/support/chain_clock.ts). */
const after = (seconds: bigint | number) => afterChainSecond(writer.client, seconds);
/** The answer for the controller holding `key`. */
async function authorization(contract: Hex, key: Hex, more = "") {
  const res = await fetch(
    `${stack.baseUrl}/v1/controller-authorization?subjectDid=${encodeURIComponent(pkh(contract))}&controllerDid=${encodeURIComponent(pkh(address(key)))}${more}`,
  );
  return { status: res.status, body: await res.json() as Record<string, any> };
}

describe("controller authorization of a did:pkh contract subject, on a real chain", () => {
  let owned: Hex;
  let transferTx: Hex;
  let binding: { uid: Hex; time: bigint };

  test("a binding by the controller whose proofTxHash is the transferOwnership to it: anchored, authorized, live contract-ownership", async () => {
    ({ contract: owned } = await deploy(A));
    const moved = await transfer(A, owned, address(C));
    expect(moved.status).toBe("success");
    transferTx = moved.hash;
    binding = await bind(C, owned, pkh(address(C)), [{ proofTxHash: transferTx }]);
    await stack.sync();

    stack.rpc.reset();
    const res = await authorization(owned, C);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      subjectDid: pkh(owned),
      controllerDid: pkh(address(C)),
      authorized: true,
      requestedPurpose: ["authentication", "assertionMethod"],
      keyPurposeStatus: "matched",
      transferProofVerified: true,
      anchoredFrom: String(binding.time),
      until: null,
      currentlyVerified: true,
      liveMethod: "contract-ownership",
      controllerWitnesses: [],
      keyBindingUid: binding.uid,
      keyBindingUids: [binding.uid],
    });
    // The first lookup of a new contract reads its owner() now, the proof's receipt, and its owner() as of the binding's
    // block (the controller must still own it when it wrote the binding, §17), once each.
    expect(stack.rpc.trips()).toEqual([["eth_call"], ["eth_getTransactionReceipt"], ["eth_call"]]);

    // Steady state: the same lookup, another purpose list, another `at`: no JSON-RPC call (each computed, not kept whole).
    stack.rpc.reset();
    const again = await authorization(owned, C);
    expect(again.body).toEqual({ ...res.body, at: again.body.at, asOf: again.body.asOf });
    expect((await authorization(owned, C, "&purpose=authentication")).body).toMatchObject({ authorized: true, keyPurposeStatus: "matched" });
    expect((await authorization(owned, C, `&at=${binding.time}`)).body).toMatchObject({ authorized: true, transferProofVerified: true, anchoredFrom: String(binding.time) });
    expect(stack.rpc.trips()).toEqual([]);
    // keyAgreement was never granted: a mismatch, whatever the proof.
    expect((await authorization(owned, C, "&purpose=keyAgreement")).body).toMatchObject({ authorized: false, keyPurposeStatus: "mismatch", transferProofVerified: true });
  });

  test("proofs that are not a transfer of this contract to the controller verify nothing, and cost nothing once read", async () => {
    const { contract: kept, creationTx } = await deploy(A);
    // C, not the owner, calls transferOwnership(C): mined, reverted, no event.
    const refused = await transfer(C, kept, address(C), 200_000n);
    expect(refused.status).toBe("reverted");
    await bind(C, kept, pkh(address(C)), [{ proofTxHash: transferTx }]); // a transfer to C, of another contract
    await bind(C, kept, pkh(address(C)), [{ proofTxHash: creationTx }]); // OwnershipTransferred(0, A): not to C
    await bind(C, kept, pkh(address(C)), [{ proofType: "tx-interaction", proofObject: { chainId: `eip155:${stack.service.chainId}`, txHash: refused.hash } }]);
    await bind(C, kept, pkh(address(C)), [{ proofTxHash: NEVER_MINED }]);
    await stack.sync();

    stack.rpc.reset();
    expect((await authorization(kept, C)).body).toMatchObject({
      authorized: false,
      transferProofVerified: false,
      keyPurposeStatus: "unknown",
      anchoredFrom: null,
      until: null,
      currentlyVerified: false,
      liveMethod: null,
      keyBindingUid: null,
      keyBindingUids: [],
    });
    // owner(), then the receipts not read before (the other contract's transfer was, by the first test).
    expect(stack.rpc.trips()).toEqual([["eth_call"], ["eth_getTransactionReceipt"], ["eth_getTransactionReceipt"], ["eth_getTransactionReceipt"]]);
    stack.rpc.reset();
    expect((await authorization(kept, C)).body).toMatchObject({ authorized: false, transferProofVerified: false });
    // A hash the chain does not have is not asked again on every request.
    expect(stack.rpc.trips()).toEqual([]);
    // The owner, with no binding, is authorized by live evidence alone.
    const owner = await authorization(kept, A);
    expect(owner.body).toMatchObject({ authorized: true, currentlyVerified: true, liveMethod: "contract-ownership", anchoredFrom: null, keyPurposeStatus: "unknown" });
    expect(owner.body).not.toHaveProperty("transferProofVerified");
  });

  test("ownership moved on to D: C's live evidence is gone, its transfer-proof window stands (§25); D is live", async () => {
    const { contract } = await deploy(A);
    const toC = await transfer(A, contract, address(C));
    const bound = await bind(C, contract, pkh(address(C)), [{ proofType: "tx-interaction", proofObject: { chainId: `eip155:${stack.service.chainId}`, txHash: toC.hash } }]);
    await after(bound.time);
    expect((await transfer(C, contract, address(D))).status).toBe("success");
    await stack.sync();

    const c = await authorization(contract, C);
    // §25: authorized = no mismatch and (a witness window, or live evidence with no until, or a verified transfer proof
    // with no until): the proof still verifies and nothing revoked the binding, so C stays authorized, not live.
    expect(c.body).toMatchObject({
      authorized: true,
      transferProofVerified: true,
      anchoredFrom: String(bound.time),
      until: null,
      currentlyVerified: false,
      liveMethod: null,
      keyBindingUid: bound.uid,
    });
    expect((await authorization(contract, C, `&at=${bound.time}`)).body).toMatchObject({ authorized: true, anchoredFrom: String(bound.time), currentlyVerified: false });
    // Before its binding was written, nothing of C's counts (and C's owner() of then is not live evidence now).
    const before = await authorization(contract, C, `&at=${bound.time - 1n}`);
    expect(before.body).toMatchObject({ authorized: false, anchoredFrom: null, keyBindingUid: null, currentlyVerified: false });
    expect(before.body).not.toHaveProperty("transferProofVerified");
    expect((await authorization(contract, D)).body).toMatchObject({ authorized: true, currentlyVerified: true, liveMethod: "contract-ownership", anchoredFrom: null });
  });

  test("a transfer mined after the binding does not show control when it was written (§17): not verified", async () => {
    const { contract } = await deploy(A);
    // A signs the transfer to C first; C names its hash in a binding; only then is it mined.
    const request = await wallet(A).prepareTransactionRequest({
      to: contract,
      data: encodeFunctionData({ abi: TRANSFER_ABI, functionName: "transferOwnership", args: [address(C)] }),
      chain: null,
      gas: 200_000n,
    });
    const signed = await wallet(A).signTransaction({ ...request, chain: null } as never);
    const hash = keccak256(signed);
    const early = await bind(C, contract, pkh(address(C)), [{ proofTxHash: hash }]);
    await after(early.time);
    await writer.client.waitForTransactionReceipt({ hash: await writer.client.sendRawTransaction({ serializedTransaction: signed }) });
    expect(await writer.client.readContract({ address: contract, abi: parseAbi(["function owner() view returns (address)"]), functionName: "owner" })).toBe(privateKeyToAccount(C).address);
    await stack.sync();

    const res = await authorization(contract, C);
    // C owns the contract now (live), but its binding was written before it did: no transfer-proof anchor.
    expect(res.body).toMatchObject({ transferProofVerified: false, anchoredFrom: null, keyBindingUid: null, currentlyVerified: true, authorized: true });
    expect((await authorization(contract, C, `&at=${early.time}`)).body).toMatchObject({ transferProofVerified: false, anchoredFrom: null });
  });

  test("the binding's revocation sets until and ends the authorization from then, live evidence included", async () => {
    await after(binding.time);
    await writer.revoke(C, stack.devnet.schemaUids["key-binding"] as Hex, binding.uid);
    const revokedAt = (await writer.client.getBlock()).timestamp;
    await stack.sync();

    stack.rpc.reset();
    const now = await authorization(owned, C);
    // C still owns the contract, but live evidence does not outlast until.
    expect(now.body).toMatchObject({
      authorized: false,
      until: String(revokedAt),
      anchoredFrom: String(binding.time),
      transferProofVerified: true,
      keyPurposeStatus: "matched",
      currentlyVerified: true,
      liveMethod: "contract-ownership",
    });
    expect((await authorization(owned, C, `&at=${revokedAt}`)).body).toMatchObject({ authorized: false, until: String(revokedAt) });
    expect((await authorization(owned, C, `&at=${revokedAt - 1n}`)).body).toMatchObject({ authorized: true, until: null, anchoredFrom: String(binding.time) });
    expect((await authorization(owned, C, `&at=${binding.time}`)).body).toMatchObject({ authorized: true, until: null });
    // Still no JSON-RPC call: the revocation came through the index, owner() and the receipt from the cache.
    expect(stack.rpc.trips()).toEqual([]);
  });
});

describe("artifact trust of a claim naming a did:pkh contract party (decisions §25: the same computation)", () => {
  test("the contract's owner's responsibility claim is verified by its live owner(); a stranger's is not", async () => {
    const { contract } = await deploy(A);
    const artifact = artifactDidFromDigest(keccak256(stringToHex(`contract party ${contract}`)));
    const claim = (issuedAt: bigint) =>
      (encodeSchemaData(CLAIM.schema, {
        responsibleParty: pkh(contract),
        subject: artifact,
        subjectLabel: "a plugin its contract's owner publishes",
        responsibilityType: ["creator"],
        proofs: [],
        issuedAt,
        effectiveAt: 0n,
        expiresAt: 0n,
      }) as { value: Hex }).value;
    const recipient = (didToAddress(artifact) as { value: Hex }).value;
    const now = (await writer.client.getBlock()).timestamp;
    const byOwner = await writer.attest(A, stack.devnet.schemaUids["responsibility-claim"] as Hex, { recipient, data: claim(now), revocable: true });
    const byStranger = await writer.attest(C, stack.devnet.schemaUids["responsibility-claim"] as Hex, { recipient, data: claim(now), revocable: true });
    await stack.sync();

    const res = await fetch(`${stack.baseUrl}/v1/artifact-trust?artifactDid=${encodeURIComponent(artifact)}`);
    expect(res.status).toBe(200);
    const body = await res.json() as { responsibilityClaims: { attestation: { uid: string }; verification: unknown }[]; summary: unknown };
    // Before, artifact trust asked a did:pkh party for a witness only, and dropped what the route authorizes.
    expect(body.responsibilityClaims.map((c) => c.attestation.uid)).toEqual([byOwner.uid]);
    expect(body.responsibilityClaims[0]!.verification).toEqual({ valid: true, basis: ["controller-authorization", "authorization-window"] });
    expect(body.summary).toEqual({ totalQueried: 2, totalVerified: 1, totalExcluded: 1, complete: true });
    expect(byStranger.uid).not.toBe(byOwner.uid);
  });
});
