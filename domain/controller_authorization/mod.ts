/**
 * Controller authorization as the reference now defines it (decisions §25): the answer of
 * `GET /v1/controller-authorization` over key status's evidence (§17) and live endpoint evidence, DID URL resolution,
 * and transfer proofs of contract subjects. Depends on keys/ and discovery/ through their mod.ts, one way.
 */
export {
  type AuthorizationWitness,
  type ControllerAuthorizationInput,
  type ControllerAuthorizationVerdict,
  DEFAULT_PURPOSES,
  evaluateControllerAuthorization,
  KEY_PURPOSES,
  type KeyPurpose,
  type KeyPurposeStatus,
} from "./authorization_rules.ts";
export {
  type ControllerAuthorization,
  type ControllerAuthorizationCode,
  type ControllerAuthorizationDeps,
  type ControllerAuthorizationRecord,
  type ControllerAuthorizationRequest,
  createControllerAuthorization,
  readBareSubject,
  readDurableController,
  readPurposes,
} from "./controller_authorization.ts";
export { createDidUrlResolver, type DidUrlCode, type DidUrlDeps, type DidUrlResolution, parseDidUrl, type ResolveDidUrl } from "./did_url.ts";
export { createCachedOwnershipReads, MAX_PROOF_TRANSACTIONS, OWNERSHIP_TRANSFERRED_TOPIC, transferProofHashes } from "./transfer_proof.ts";
