/**
 * The service's one rule for a subject (issue 43, `normalizeSubjectDid` in domain/did/subject.ts), applied by the helpers
 * before they send anything: a subject the service would refuse with 400 `INVALID_DID` (whitespace or a control
 * character inside, a did:web naming no domain, not a DID) is refused here with the same code, with no request made.
 */
import { normalizeSubjectDid } from "../domain/did/mod.ts";
import { AtsClientError } from "./errors.ts";

/** Throws {@link AtsClientError} `INVALID_DID` naming `field` when `subject` breaks the service's subject rule. */
export function requireSubject(subject: string, field = "subject"): void {
  const checked = normalizeSubjectDid(subject);
  if (!checked.ok) throw new AtsClientError("INVALID_DID", `${field} is not a DID or a domain: ${checked.message}`);
}
