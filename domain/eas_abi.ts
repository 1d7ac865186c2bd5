import { parseAbi } from "viem/utils";
import type { HexString } from "../ports/eas.ts";

/** The zero bytes32, meaning "no referenced attestation". */
export const ZERO_UID: HexString = `0x${"0".repeat(64)}`;
/** The zero address. */
export const ZERO_ADDRESS: HexString = `0x${"0".repeat(40)}`;

/** The part of the EAS 1.4.0 ABI the service calls, with every custom error it can revert with. */
export const EAS_ABI = parseAbi([
  "struct AttestationRequestData { address recipient; uint64 expirationTime; bool revocable; bytes32 refUID; bytes data; uint256 value; }",
  "struct Signature { uint8 v; bytes32 r; bytes32 s; }",
  "struct DelegatedAttestationRequest { bytes32 schema; AttestationRequestData data; Signature signature; address attester; uint64 deadline; }",
  "struct Attestation { bytes32 uid; bytes32 schema; uint64 time; uint64 expirationTime; uint64 revocationTime; bytes32 refUID; address recipient; address attester; bool revocable; bytes data; }",
  "struct AttestationRequest { bytes32 schema; AttestationRequestData data; }",
  "struct MultiDelegatedAttestationRequest { bytes32 schema; AttestationRequestData[] data; Signature[] signatures; address attester; uint64 deadline; }",
  "function attest(AttestationRequest request) payable returns (bytes32)",
  "function attestByDelegation(DelegatedAttestationRequest delegatedRequest) payable returns (bytes32)",
  "function multiAttestByDelegation(MultiDelegatedAttestationRequest[] multiDelegatedRequests) payable returns (bytes32[])",
  "function getNonce(address account) view returns (uint256)",
  "function getAttestation(bytes32 uid) view returns (Attestation)",
  "function getSchemaRegistry() view returns (address)",
  "function getDomainSeparator() view returns (bytes32)",
  "function version() view returns (string)",
  "function increaseNonce(uint256 newNonce)",
  "event Attested(address indexed recipient, address indexed attester, bytes32 uid, bytes32 indexed schemaUID)",
  "error AccessDenied()",
  "error DeadlineExpired()",
  "error InvalidEAS()",
  "error InvalidLength()",
  "error InvalidSignature()",
  "error NotFound()",
  "error InvalidNonce()",
  "error AlreadyRevoked()",
  "error AlreadyRevokedOffchain()",
  "error AlreadyTimestamped()",
  "error InsufficientValue()",
  "error InvalidAttestation()",
  "error InvalidAttestations()",
  "error InvalidExpirationTime()",
  "error InvalidOffset()",
  "error InvalidRegistry()",
  "error InvalidRevocation()",
  "error InvalidRevocations()",
  "error InvalidSchema()",
  "error InvalidVerifier()",
  "error Irrevocable()",
  "error NotPayable()",
  "error WrongSchema()",
]);

/** topic0 of `Attested(address,address,bytes32,bytes32)`. */
export const ATTESTED_TOPIC = "0x8bf46bf4cfd674fa735a3d63ec1c9ad4153f033c290341f3a588b75685141b35";

/** topic0 of `Revoked(address,address,bytes32,bytes32)`: the same indexed layout as `Attested`. */
export const REVOKED_TOPIC = "0xf930a6e2523c9cc298691873087a740550b8fc85a0680830414c148ed927f615";

/** An EAS `Attestation` struct as viem decodes it. */
export type EasAttestation = {
  uid: `0x${string}`;
  schema: `0x${string}`;
  time: bigint;
  expirationTime: bigint;
  revocationTime: bigint;
  refUID: `0x${string}`;
  recipient: `0x${string}`;
  attester: `0x${string}`;
  revocable: boolean;
  data: `0x${string}`;
};
