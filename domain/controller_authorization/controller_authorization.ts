/**
 * `GET /v1/controller-authorization` (decisions §25): is `controllerDid` an authorized controller of `subjectDid` for
 * the requested key purposes at `at`, with the reference's answer shape. The chain evidence is key status's (§17: the
 * same reader over the index, the same rule on who may bind a key), so the answer costs no JSON-RPC call in steady
 * state; live evidence is discovery's cached record (DNS TXT `controller=` and `jkt=`, did.json), the domain's JWK Set
 * for did:jwk controllers, and for a did:pkh contract subject its `owner()` and transfer proofs through cached reads.
 */
import type { HexString } from "../../ports/eas.ts";
import type { OwnershipChain } from "../../ports/ownership_chain.ts";
import { parseDidPkh } from "../did/mod.ts";
import { type LiveMethod, liveControllerEvidence, type LookupClient, type LookupJwks } from "../discovery/mod.ts";
import { type BindingEvidence, bindingNames, createKeyTrust, type KeyStatusDeps, readAt, readKeyDid, readSubjectDid } from "../keys/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import {
  DEFAULT_PURPOSES,
  evaluateControllerAuthorization,
  KEY_PURPOSES,
  type KeyPurpose,
  type KeyPurposeStatus,
} from "./authorization_rules.ts";
import { MAX_PROOF_TRANSACTIONS, OWNERSHIP_TRANSFERRED_TOPIC, transferProofHashes } from "./transfer_proof.ts";

/** The answer (decisions §25). `at` is a number; `anchoredFrom`, `until` and `issuedAt` decimal strings. */
export type ControllerAuthorizationRecord = {
  readonly subjectDid: string;
  readonly controllerDid: string;
  readonly at: number;
  readonly authorized: boolean;
  readonly requestedPurpose: readonly KeyPurpose[];
  readonly keyPurposeStatus: KeyPurposeStatus;
  readonly anchoredFrom: string | null;
  readonly until: string | null;
  readonly currentlyVerified: boolean;
  readonly liveMethod: LiveMethod | null;
  readonly controllerWitnesses: readonly {
    readonly uid: string;
    readonly issuedAt: string;
    readonly attester: string;
    readonly method: string;
    readonly pinned?: string | undefined;
  }[];
  readonly keyBindingUid: string | null;
  readonly keyBindingUids: readonly string[];
  readonly transferProofVerified?: boolean | undefined;
};

/** Why an answer could not be given. */
export type ControllerAuthorizationCode = "INVALID_INPUT" | "INVALID_DID" | "UNSUPPORTED_CHAIN" | "NETWORK_ERROR" | "INDEX_STALE";

/** The request as the route passes it (query strings). */
export type ControllerAuthorizationRequest = {
  readonly subjectDid?: unknown;
  readonly controllerDid?: unknown;
  readonly purpose?: unknown;
  readonly at?: unknown;
};

/** The use case; `client`: whose share of the subject domain's lookup budget the live evidence also takes. */
export type ControllerAuthorization = (request: ControllerAuthorizationRequest, options?: LookupClient) => Promise<Result<ControllerAuthorizationRecord, ControllerAuthorizationCode>>;

/** What it needs: key status's evidence, and how long live evidence stands for "now". */
export type ControllerAuthorizationDeps = KeyStatusDeps & {
  /** `DISCOVERY_CACHE_SECONDS`: live evidence counts when `at` is omitted or at most this old. */
  readonly discoveryCacheSeconds: number;
  /** The subject domain's JWK Set, for did:jwk controllers not named by DNS or did.json. */
  readonly jwks?: LookupJwks | undefined;
  /** Contract reads for did:pkh contract subjects (cached: see {@link createCachedOwnershipReads}); absent: not read. */
  readonly contracts?: OwnershipChain | undefined;
  /**
   * The contract reads of every other chain the deployment reads (decisions §30): a contract subject there is live
   * `contract-ownership` when its `owner()` is the controller. Transfer proofs stay on the index's chain (they are
   * dated by its blocks). Absent, or undefined for a chain: not read, never live evidence.
   */
  readonly contractsOn?: ((chainId: number) => OwnershipChain | undefined) | undefined;
};

const ENDPOINT_FAILED = "The subject's endpoint evidence could not be read; nothing can be said about this controller now";
const CHAIN_FAILED = "The contract's owner or a transfer proof could not be read; nothing can be said about this controller now";

/** `purpose` as a list of W3C relationships: a comma list; absent or empty: `authentication,assertionMethod`. */
export function readPurposes(value: unknown): Result<KeyPurpose[], "INVALID_INPUT"> {
  if (value === undefined || value === "") return ok([...DEFAULT_PURPOSES]);
  const message = `purpose must be a comma list of ${KEY_PURPOSES.join(", ")}`;
  if (typeof value !== "string" || value.length > 200) return fail("INVALID_INPUT", message);
  const out: KeyPurpose[] = [];
  for (const part of value.split(",").map((p) => p.trim())) {
    if (!(KEY_PURPOSES as readonly string[]).includes(part)) return fail("INVALID_INPUT", message);
    if (!out.includes(part as KeyPurpose)) out.push(part as KeyPurpose);
  }
  return ok(out);
}

/** A bare subject DID; a DID URL is refused with a message saying what to give instead. */
export function readBareSubject(value: unknown): Result<string, "INVALID_INPUT" | "INVALID_DID"> {
  if (typeof value === "string" && value.includes("#")) {
    return fail("INVALID_DID", "subjectDid is a DID URL: a key reference, not a subject; give the bare DID (the part before #)");
  }
  return readSubjectDid(value);
}

/** A durable controller (did:pkh or did:jwk); a DID URL is refused, naming the route that resolves it. */
export function readDurableController(value: unknown): Result<string, "INVALID_INPUT" | "INVALID_DID"> {
  if (typeof value === "string" && value.includes("#")) {
    return fail("INVALID_DID", "controllerDid is a DID URL, a mutable key reference; resolve it to its durable did:jwk with GET /v1/did-url/resolve");
  }
  const key = readKeyDid(value, "controllerDid");
  if (!key.ok) return key;
  if (!key.value.startsWith("did:pkh:") && !key.value.startsWith("did:jwk:")) {
    return fail("INVALID_DID", "controllerDid must be a durable controller: a did:pkh or a did:jwk");
  }
  return key;
}

/** Builds controller authorization over key status's evidence (one pinned index read) and the live evidence. */
export function createControllerAuthorization(deps: ControllerAuthorizationDeps): ControllerAuthorization {
  const trust = createKeyTrust(deps);
  const chainId = deps.index.chainId;

  /** The live methods naming the controller now, or NETWORK_ERROR when a source that could have said so failed; as `lookup`'s client. */
  async function liveMethods(subjectDid: string, controllerDid: string, record: Parameters<typeof liveControllerEvidence>[1], lookup: LookupClient): Promise<Result<LiveMethod[], "NETWORK_ERROR">> {
    if (subjectDid.startsWith("did:web:")) {
      let live = liveControllerEvidence(controllerDid, record);
      if (live.methods.length === 0 && controllerDid.startsWith("did:jwk:") && deps.jwks !== undefined) {
        const jwks = liveControllerEvidence(controllerDid, undefined, await deps.jwks(subjectDid, lookup));
        live = { methods: jwks.methods, unavailable: live.unavailable || jwks.unavailable };
      }
      return live.unavailable ? fail("NETWORK_ERROR", ENDPOINT_FAILED) : ok([...live.methods]);
    }
    const contract = liveContractOf(subjectDid);
    const controller = controllerDid.startsWith("did:pkh:eip155:") ? controllerDid.split(":")[4]?.toLowerCase() : undefined;
    if (contract === undefined || controller === undefined) return ok([]);
    const owner = await contract.reads.owner(contract.address);
    if (!owner.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
    return ok(owner.value?.toLowerCase() === controller ? ["contract-ownership"] : []);
  }

  /** A did:pkh subject's address and the contract reads of its chain, when the deployment reads that chain. */
  function liveContractOf(subjectDid: string): { address: HexString; reads: OwnershipChain } | undefined {
    const pkh = parseDidPkh(subjectDid);
    if (!pkh.ok || pkh.value.namespace !== "eip155") return undefined;
    const on = Number(pkh.value.chainId);
    const reads = on === chainId ? deps.contracts : deps.contractsOn?.(on);
    return reads === undefined ? undefined : { address: pkh.value.address.toLowerCase() as HexString, reads };
  }

  /** A did:pkh subject's address on the active chain, or undefined. */
  function contractOf(subjectDid: string): HexString | undefined {
    const pkh = parseDidPkh(subjectDid);
    if (!pkh.ok || pkh.value.namespace !== "eip155" || Number(pkh.value.chainId) !== chainId) return undefined;
    return pkh.value.address.toLowerCase() as HexString;
  }

  /**
   * For a did:pkh contract subject: whether each binding's transfer proof shows ownership moving to the controller, in
   * a transaction mined no later than the binding's block, and the controller still its `owner()` as of that block.
   * Only bindings the rules can count are looked at (the controller's own, naming it, written by `at`), oldest first,
   * and at most {@link MAX_PROOF_TRANSACTIONS} transactions in all.
   */
  async function transferProofs(
    subjectDid: string,
    controllerDid: string,
    at: bigint,
    bindings: readonly BindingEvidence[],
  ): Promise<Result<Map<string, boolean> | undefined, "NETWORK_ERROR">> {
    const contract = contractOf(subjectDid);
    const controller = controllerDid.startsWith("did:pkh:eip155:") ? controllerDid.split(":")[4]?.toLowerCase() : undefined;
    if (contract === undefined || controller === undefined || deps.contracts === undefined) return ok(undefined);
    // Only the controller's own bindings: the proof shows the ownership moved to it.
    const withProofs = bindings
      .filter((b) => b.attester.toLowerCase() === controller && b.time <= at && bindingNames(b, controllerDid))
      .sort((a, b) => (a.time === b.time ? (a.uid < b.uid ? -1 : 1) : a.time < b.time ? -1 : 1))
      .map((b) => ({ uid: b.uid, blockNumber: b.blockNumber, hashes: transferProofHashes(b.proofs ?? []) }))
      .filter((b) => b.hashes.length > 0);
    if (withProofs.length === 0) return ok(undefined);
    const out = new Map<string, boolean>();
    const looked = new Set<string>();
    for (const b of withProofs) {
      let verified = false;
      for (const hash of b.hashes) {
        if (!looked.has(hash) && looked.size >= MAX_PROOF_TRANSACTIONS) break;
        looked.add(hash);
        const tx = await deps.contracts.transaction(hash);
        if (!tx.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
        // Mined by the binding's block: a transfer after it does not show control when the binding was written (§17).
        const minedBy = tx.value?.blockNumber === undefined || b.blockNumber === undefined || tx.value.blockNumber <= b.blockNumber;
        verified = tx.value !== null && minedBy && tx.value.logs.some((log) =>
          log.address.toLowerCase() === contract && log.topics[0]?.toLowerCase() === OWNERSHIP_TRANSFERRED_TOPIC &&
          `0x${(log.topics[2] ?? "").slice(-40).toLowerCase()}` === controller
        );
        // And still the owner when the binding was written (§17): a transfer to it long before, with the ownership moved
        // on since, let any former owner bind itself for good (the current owner cannot revoke another's attestation).
        if (verified && b.blockNumber !== undefined) {
          const owner = await deps.contracts.owner(contract as HexString, b.blockNumber);
          if (!owner.ok) return fail("NETWORK_ERROR", CHAIN_FAILED);
          verified = owner.value === controller;
        }
        if (verified) break;
      }
      out.set(b.uid, verified);
    }
    return ok(out);
  }

  return async function controllerAuthorization(request, options = {}) {
    const subjectDid = readBareSubject(request.subjectDid);
    if (!subjectDid.ok) return subjectDid;
    const controllerDid = readDurableController(request.controllerDid);
    if (!controllerDid.ok) return controllerDid;
    const purposes = readPurposes(request.purpose);
    if (!purposes.ok) return purposes;
    const nowSeconds = Math.floor(deps.clock.nowMs() / 1000);
    const at = readAt(request.at, nowSeconds);
    if (!at.ok) return at;
    // Live evidence describes now: it counts for `at` omitted, or no older than the discovery cache keeps an answer.
    const liveCounts = request.at === undefined || request.at === "" || nowSeconds - at.value <= deps.discoveryCacheSeconds;

    const controllerAddress = controllerDid.value.startsWith("did:pkh:eip155:") ? controllerDid.value.split(":")[4] : undefined;
    const contractSubject = contractOf(subjectDid.value) !== undefined && deps.contracts !== undefined;
    // A contract subject's controller may show its control by a transfer proof in its own binding: read those too.
    const read = await trust.evidence([subjectDid.value], { client: options.client, ...contractSubject && controllerAddress !== undefined ? { alsoBindingsFrom: [controllerAddress] } : {} });
    if (!read.ok) return read;
    const e = read.value.get(subjectDid.value)!;
    const live = liveCounts ? await liveMethods(subjectDid.value, controllerDid.value, e.endpointRecord, options) : ok([] as LiveMethod[]);
    const proofs = await transferProofs(subjectDid.value, controllerDid.value, BigInt(at.value), e.bindings);
    if (!proofs.ok) return proofs;
    const verdict = evaluateControllerAuthorization({
      subjectDid: subjectDid.value,
      controllerDid: controllerDid.value,
      at: BigInt(at.value),
      chainId,
      purposes: purposes.value,
      witnesses: e.witnesses,
      bindings: e.bindings,
      endpointKeys: e.endpointKeys,
      endpointUnavailable: e.endpointUnavailable,
      liveMethods: live.ok ? live.value : [],
      transferProofs: proofs.value,
    });
    // A live source that failed matters only when nothing else authorizes: never a guess.
    if (!live.ok && !verdict.authorized) return live;
    // A binding that does not count may count by the endpoints' word (§17): one naming the controller (its cut), or the
    // attester of a binding the verdict rests on, up the chain. With an endpoint unanswered, a guess (as key status).
    // Before, a DNS outage dropped the owner's cut, and a cut-off controller (or one it bound again) was authorized.
    if (verdict.endpointsCouldChange) return fail("NETWORK_ERROR", ENDPOINT_FAILED);
    return ok({
      subjectDid: subjectDid.value,
      controllerDid: controllerDid.value,
      at: at.value,
      authorized: verdict.authorized,
      requestedPurpose: purposes.value,
      keyPurposeStatus: verdict.keyPurposeStatus,
      anchoredFrom: verdict.anchoredFrom === null ? null : verdict.anchoredFrom.toString(),
      until: verdict.until === null ? null : verdict.until.toString(),
      currentlyVerified: verdict.currentlyVerified,
      liveMethod: verdict.liveMethod,
      controllerWitnesses: verdict.controllerWitnesses.map((w) => ({ ...w, issuedAt: w.issuedAt.toString() })),
      keyBindingUid: verdict.keyBindingUid,
      keyBindingUids: verdict.keyBindingUids,
      ...(verdict.transferProofVerified === undefined ? {} : { transferProofVerified: verdict.transferProofVerified }),
    });
  };
}
