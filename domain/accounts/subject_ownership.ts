/**
 * Proof that a wallet owns a subject (decisions §12, `POST /api/verify/subject-ownership`). Methods, in the
 * order tried:
 *
 * - did:web: the wallet is a controller of the domain by the existing discovery (DNS TXT → `dns`, did.json →
 *   `did-document`), with its SSRF rules, per-domain budget and cache;
 * - did:pkh of the wallet itself (any eip155 chain) → `wallet`;
 * - did:pkh of a contract on a chain the deployment reads (the active chain, or each chain of `chains`, decisions §30):
 *   its `owner()` is the wallet → `contract`; else, with `txHash`:
 *   the transaction created the contract and was sent by the wallet, and no other wallet is its `owner()` since
 *   → `minting-wallet`, or it carries an
 *   `OwnershipTransferred` from the contract to the wallet, which is still `owner()` → `transfer`.
 *
 * A proof that fails says why (`error`, and in `details` what would make it pass); a lookup that could not be
 * made is NETWORK_ERROR (502), never "failed".
 */
import type { HexString } from "../../ports/eas.ts";
import type { OwnershipChain } from "../../ports/ownership_chain.ts";
import type { ProofChains } from "../../ports/proof_chains.ts";
import { type DiscoverControllers, unreadableNow } from "../discovery/mod.ts";
import { isSameControllerId, normalizeDid, normalizeSubjectDid, parseDidPkh } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";

/** topic0 of `OwnershipTransferred(address,address)` (OpenZeppelin Ownable). */
export const OWNERSHIP_TRANSFERRED_TOPIC = "0x8be0079c531659141344cd1fd0a4f28419497f9722a3daafe3b4186f6b6457e0";

/** How a subject was proven. */
export type OwnershipMethod = "dns" | "did-document" | "wallet" | "contract" | "minting-wallet" | "transfer";

/** The answer of the ownership check (the reference's shape). */
export type OwnershipAnswer = {
  readonly ok: boolean;
  readonly status: "verified" | "failed";
  readonly subjectDid: string;
  readonly connectedWalletDid: string;
  readonly method?: OwnershipMethod;
  readonly error?: string;
  readonly details?: string;
  readonly controllingWalletDid?: string;
};

/** The request: the subject, the wallet, and optionally the transaction that shows the ownership. */
export type OwnershipRequest = {
  readonly subjectDid: string;
  readonly connectedWalletDid: string;
  readonly txHash?: string | undefined;
  /**
   * A proof kept from before (a subject of the account), checked again as it stands now: `minting-wallet` then needs no
   * `txHash` (a creation cannot be undone), only that no other wallet is the contract's `owner()` since.
   */
  readonly provenBy?: string | undefined;
};

export type VerifySubjectOwnership = (request: OwnershipRequest) => Promise<Result<OwnershipAnswer, "INVALID_INPUT" | "INVALID_DID" | "NETWORK_ERROR">>;

/**
 * Builds the ownership check. `chain` is the active chain; `chains`, when given, the reads of every chain the deployment
 * reads (decisions §30): a contract on any other chain is not checked, and so never verified.
 */
export function createSubjectOwnership(deps: {
  readonly discover: DiscoverControllers;
  readonly chain: OwnershipChain;
  readonly chains?: Pick<ProofChains, "chainIds" | "ownership"> | undefined;
}): VerifySubjectOwnership {
  const chainOf = (chainId: number): OwnershipChain | undefined =>
    deps.chains?.ownership(chainId) ?? (chainId === deps.chain.chainId ? deps.chain : undefined);
  const readChains = (deps.chains?.chainIds ?? [deps.chain.chainId]).map((id) => `eip155:${id}`).join(", ");
  return async function verifySubjectOwnership(request) {
    // The one subject rule (issue 43): no whitespace or control character, a did:web naming a domain.
    const subject = normalizeSubjectDid(request.subjectDid);
    if (!subject.ok) {
      const web = normalizeDid(request.subjectDid);
      return fail("INVALID_DID", web.ok && web.value.startsWith("did:web:") ? "subjectDid is not a did:web this service can look up" : "subjectDid is not a DID");
    }
    const walletDid = normalizeDid(request.connectedWalletDid);
    const wallet = walletDid.ok ? parseDidPkh(walletDid.value) : undefined;
    if (!walletDid.ok || !wallet?.ok || wallet.value.namespace !== "eip155") {
      return fail("INVALID_DID", "connectedWalletDid must be an eip155 did:pkh");
    }
    if (request.txHash !== undefined && !/^0x[0-9a-fA-F]{64}$/.test(request.txHash)) return fail("INVALID_INPUT", "txHash must be 32 bytes of hex");
    const base = { subjectDid: subject.value, connectedWalletDid: walletDid.value };
    const verified = (method: OwnershipMethod): OwnershipAnswer => ({ ok: true, status: "verified", ...base, method, controllingWalletDid: walletDid.value });
    const failed = (error: string, details?: string, method?: OwnershipMethod): OwnershipAnswer => ({
      ok: false,
      status: "failed",
      ...base,
      ...(method === undefined ? {} : { method }),
      error,
      ...(details === undefined ? {} : { details }),
    });
    const walletAddress = wallet.value.address.toLowerCase();

    if (subject.value.startsWith("did:web:")) {
      // Never the stale answer kept for when the domain's budget is spent: a controller the owner took out of DNS would
      // prove ownership for ten more minutes (key status asks the same way).
      const discovery = await deps.discover(subject.value, { freshOnly: true });
      if (!discovery.ok) {
        return discovery.code === "RATE_LIMITED"
          ? fail("NETWORK_ERROR", "The subject's endpoints could not be looked up now")
          : fail("INVALID_DID", "subjectDid is not a did:web this service can look up");
      }
      const key = discovery.value.controllerKeys.find((k) => isSameControllerId(k.canonicalId, walletDid.value));
      if (key !== undefined) return ok(verified(key.sources.includes("dns-txt") ? "dns" : "did-document"));
      // Only a source that could not be read now leaves it open; one read and unusable for good (a did.json that is not
      // JSON or not the subject's document, a redirect) is the subject's: the proof failed.
      if (discovery.value.evidence.some(unreadableNow)) {
        return fail("NETWORK_ERROR", "A source of the subject's controllers could not be read now");
      }
      const domain = subject.value.slice("did:web:".length).split(/[:/]/)[0]!.replace(/%3a.*$/i, "");
      return ok(failed(
        "The wallet is not a controller of the subject",
        `Publish a TXT record at _controllers.${domain} reading "v=1;controller=${walletDid.value}", or list the wallet as a blockchainAccountId in https://${domain}/.well-known/did.json`,
      ));
    }

    const pkh = parseDidPkh(subject.value);
    if (!pkh.ok || pkh.value.namespace !== "eip155") {
      return ok(failed("Only did:web and eip155 did:pkh subjects can be proven", "Use a did:web of a domain you control or the did:pkh of your wallet or contract"));
    }
    const subjectAddress = pkh.value.address.toLowerCase() as HexString;
    if (subjectAddress === walletAddress) return ok(verified("wallet"));
    const chain = chainOf(Number(pkh.value.chainId));
    if (chain === undefined) return ok(failed("The subject is on another chain", `Contract subjects are proven on ${readChains} only`));
    const code = await chain.hasCode(subjectAddress);
    if (!code.ok) return fail("NETWORK_ERROR", "The chain did not answer");
    if (!code.value) return ok(failed("The subject is neither the wallet nor a contract", "Sign in with the subject's own wallet"));
    const owner = await chain.owner(subjectAddress);
    if (!owner.ok) return fail("NETWORK_ERROR", "The chain did not answer");
    const isOwner = owner.value?.toLowerCase() === walletAddress;
    // Creating a contract proves control only while no one else owns it: a creator that transferred or sold it (its
    // owner() now another wallet) kept proving it, and wrote key bindings for it on the private relay.
    const created = () =>
      ok(owner.value === null || isOwner
        ? verified("minting-wallet")
        : failed(`The wallet created the contract, but its owner() is now ${owner.value}`, "Prove it with the owner's wallet", "minting-wallet"));
    if (request.txHash !== undefined) {
      const tx = await chain.transaction(request.txHash.toLowerCase() as HexString);
      if (!tx.ok) return fail("NETWORK_ERROR", "The chain did not answer");
      if (tx.value === null) return ok(failed("No such transaction on this chain", "Give the hash of a mined transaction"));
      if (tx.value.contractAddress?.toLowerCase() === subjectAddress) {
        if (tx.value.from.toLowerCase() !== walletAddress) return ok(failed("The contract was created by another wallet", undefined, "minting-wallet"));
        return created();
      }
      const transferred = tx.value.logs.some((log) =>
        log.address.toLowerCase() === subjectAddress && log.topics[0]?.toLowerCase() === OWNERSHIP_TRANSFERRED_TOPIC &&
        `0x${(log.topics[2] ?? "").slice(-40).toLowerCase()}` === walletAddress
      );
      if (transferred) {
        // Ownership may have moved on since: the wallet must still be the owner.
        return ok(isOwner ? verified("transfer") : failed("The ownership was transferred to the wallet but has moved on since", "The wallet must still be owner()", "transfer"));
      }
    }
    if (request.provenBy === "minting-wallet" && request.txHash === undefined) return created();
    if (isOwner) return ok(verified("contract"));
    return ok(failed(
      "The wallet is not the contract's owner()",
      "Make the wallet the owner(), or give the txHash of the contract's creation by the wallet",
      "contract",
    ));
  };
}
