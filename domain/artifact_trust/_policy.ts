/** The anchors artifact trust reads on the active chain. */
import type { AttestationIndex } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { caip2 } from "../identity/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { ARTIFACT_POLICY_SCHEMAS, type ArtifactPolicySchema, type Policy } from "./_types.ts";
import { unique } from "./_util.ts";

const NO_ANCHORS = "The active chain does not have usable artifact trust anchors";
const UID = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The anchors artifact trust needs on the active chain, or UNSUPPORTED_CHAIN. */
export function policyOf(anchors: TrustAnchors, index: AttestationIndex): Result<Policy, "UNSUPPORTED_CHAIN"> {
  const id = caip2(index.chainId);
  const chain = Object.hasOwn(anchors.chains, id) ? anchors.chains[id] : undefined;
  if (
    chain === undefined || typeof chain.easContract !== "string" || !ADDRESS.test(chain.easContract) ||
    chain.easContract.toLowerCase() !== index.easAddress.toLowerCase()
  ) {
    return fail("UNSUPPORTED_CHAIN", NO_ANCHORS);
  }
  const names = new Map<string, ArtifactPolicySchema>();
  const policyUids: HexString[] = [];
  for (const name of ARTIFACT_POLICY_SCHEMAS) {
    const uid = Object.hasOwn(chain.schemas, name) ? chain.schemas[name] : undefined;
    if (typeof uid !== "string" || !UID.test(uid)) {
      return fail("UNSUPPORTED_CHAIN", `The active chain is missing the ${name} artifact trust schema`);
    }
    names.set(uid.toLowerCase(), name);
    policyUids.push(uid.toLowerCase() as HexString);
  }
  const optional = (name: string) => {
    const uid = Object.hasOwn(chain.schemas, name) ? chain.schemas[name] : undefined;
    return typeof uid === "string" && UID.test(uid) ? (uid.toLowerCase() as HexString) : undefined;
  };
  const witnessUid = optional("controller-witness");
  const keyBindingUid = optional("key-binding");
  const allUids = unique([...policyUids, ...[witnessUid, keyBindingUid].filter((u) => u !== undefined)]);
  return ok({ caip2: id, easContract: chain.easContract, policyUids, names, witnessUid, keyBindingUid, allUids });
}
