import { encodePacked, keccak256 } from "viem/utils";
import type { Hex } from "viem";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/** An EAS schema the service knows by name. */
export type SchemaDefinition = {
  readonly name: string;
  readonly schema: string;
  readonly revocable: boolean;
};

/**
 * The nine schemas of the reference (§3.1), with their exact type strings and revocability.
 * The devnet registers every one of them; the legacy linked-identifier is kept because older
 * clients still sign against it. The trust anchors name the current one `linked-identifier`.
 */
export const KNOWN_SCHEMAS: readonly SchemaDefinition[] = [
  {
    name: "user-review",
    schema:
      "string subject, string version, uint256 ratingValue, string reviewBody, string[] screenshotUrls, string[] proofs",
    revocable: false,
  },
  {
    name: "user-review-response",
    schema: "string subject, string refUID, string responseBody",
    revocable: false,
  },
  {
    name: "linked-identifier",
    schema:
      "string subject, string linkedId, string[] proofs, uint256 issuedAt, uint256 effectiveAt, uint256 expiresAt",
    revocable: true,
  },
  {
    name: "linked-identifier-legacy",
    schema:
      "string subject, string linkedId, string method, string[] proofs, uint256 issuedAt, uint256 effectiveAt, uint256 expiresAt",
    revocable: true,
  },
  {
    name: "key-binding",
    schema:
      "string subject, string keyId, string publicKeyJwk, string[] keyPurpose, string[] proofs, uint256 issuedAt, uint256 effectiveAt, uint256 expiresAt",
    revocable: true,
  },
  {
    name: "controller-witness",
    schema: "string subject, string controller, string method, uint256 observedAt",
    revocable: false,
  },
  {
    name: "security-assessment",
    schema:
      "string subject, string organization, string version, string versionHW, string payload, string payloadVersion, string payloadSpecURI, string payloadSpecDigest, uint256 issuedAt, uint256 effectiveAt, uint256 expiresAt",
    revocable: false,
  },
  {
    name: "certification",
    schema:
      "string subject, string organization, string version, string versionHW, string subjectURI, string programID, string programURI, string assessor, string assessorURI, string certificationLevel, string outcome, string reportURI, string reportDigest, string payload, string payloadVersion, string payloadSpecURI, string payloadSpecDigest, uint256 issuedAt, uint256 effectiveAt, uint256 expiresAt",
    revocable: false,
  },
  {
    name: "responsibility-claim",
    schema:
      "string responsibleParty, string subject, string subjectLabel, string[] responsibilityType, string[] proofs, uint256 issuedAt, uint256 effectiveAt, uint256 expiresAt",
    revocable: true,
  },
];

/** Computes an EAS schema UID the way SchemaRegistry does (no resolver). */
export function computeSchemaUid(definition: Pick<SchemaDefinition, "schema" | "revocable">): Hex {
  return keccak256(
    encodePacked(["string", "address", "bool"], [definition.schema, ZERO_ADDRESS, definition.revocable]),
  );
}

/** Finds a known schema by its trust-anchor name. */
export function findSchemaByName(name: string): SchemaDefinition | undefined {
  return KNOWN_SCHEMAS.find((s) => s.name === name);
}
