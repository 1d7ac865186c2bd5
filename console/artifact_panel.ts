/** The "Check an artifact" panel: a did:artifact (typed, or hashed from a file in the browser) and what a plugin loader would decide. */
import type { ArtifactTrustItem } from "../domain/artifact_trust/mod.ts";
import { type ArtifactTrustVerdict, artifactDidOfBytes, AtsClientError, evaluateArtifactTrust, fetchArtifactTrust } from "../client/mod.ts";
import { readOptions } from "./_chain.ts";
import { h, byId, setStatus, describeError, busy, seconds } from "./_dom.ts";

const GROUPS = [
  ["responsibilityClaims", "Responsibility claims"],
  ["securityAssessments", "Security assessments"],
  ["certifications", "Certifications"],
  ["otherAttestations", "Linked identifiers and other attestations"],
] as const;
const SHOWN_FIELDS = ["responsibleParty", "subjectLabel", "responsibilityType", "organization", "version", "certificationLevel", "outcome", "linkedId"];

function itemCard(item: ArtifactTrustItem): HTMLElement {
  const a = item.attestation;
  const rows: (HTMLElement | string)[] = [];
  const row = (name: string, value: string) => rows.push(h("dt", {}, name), h("dd", {}, value));
  row("Attester", a.attesterLabel ? `${a.attesterLabel} (${a.attester})` : a.attester);
  for (const field of SHOWN_FIELDS) {
    const value = a.data[field];
    if (value === undefined || value === "" || (Array.isArray(value) && value.length === 0)) continue;
    row(field, Array.isArray(value) ? value.join(", ") : String(value));
  }
  row("Attested", seconds(a.time));
  row("Verified by", item.verification.basis.join(", "));
  row("UID", a.uid);
  return h("article", { class: "card item", "data-schema": a.schemaName }, h("h4", {}, a.schemaName), h("dl", {}, rows));
}

function renderVerdict(verdict: ArtifactTrustVerdict): HTMLElement {
  const qualifying = verdict.qualifyingClaims.responsibilityClaims.length + verdict.qualifyingClaims.securityAssessments.length;
  return h("div", { class: `box ${verdict.warn ? "warn" : "good"}`, id: "artifact-verdict", "data-warn": String(verdict.warn) },
    h("strong", {}, verdict.warn ? "A plugin loader would warn." : "A plugin loader would not warn."),
    verdict.warn
      ? h("ul", {}, verdict.reasons.map((r) => h("li", {}, r)), verdict.failure ? h("li", {}, `Code: ${verdict.failure.code}`) : null)
      : h("p", {}, `${qualifying} qualifying record${qualifying === 1 ? "" : "s"}: ${verdict.qualifyingClaims.responsibilityClaims.length} responsibility claim(s), ${verdict.qualifyingClaims.securityAssessments.length} security assessment(s) from approved issuers.`),
    verdict.unqualifiedResponsibilityClaims > 0
      ? h("p", {}, `${verdict.unqualifiedResponsibilityClaims} verified responsibility claim(s) name someone other than the declared publisher and do not count.`)
      : null,
  );
}

async function artifactFromFile(file: File): Promise<void> {
  setStatus("artifact-status", "progress", `Hashing ${file.name} in this browser…`);
  const did = await artifactDidOfBytes(await file.arrayBuffer());
  byId<HTMLInputElement>("artifact-input").value = did;
  setStatus("artifact-status", "ok", `${file.name} (${file.size} bytes) is ${did}`);
}

export function setUpArtifact(): void {
  const form = byId<HTMLFormElement>("artifact-form");
  const fileInput = byId<HTMLInputElement>("artifact-file");
  fileInput.addEventListener("change", () => {
    const file = fileInput.files?.[0];
    if (file) void artifactFromFile(file).catch((error) => setStatus("artifact-status", "error", describeError(error)));
  });
  const drop = byId("artifact-drop");
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const file = event.dataTransfer?.files[0];
    if (file) void artifactFromFile(file).catch((error) => setStatus("artifact-status", "error", describeError(error)));
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const did = byId<HTMLInputElement>("artifact-input").value.trim();
    const publisherDid = byId<HTMLInputElement>("artifact-publisher").value.trim() || undefined;
    const result = byId("artifact-result");
    result.replaceChildren();
    if (did === "") {
      setStatus("artifact-status", "error", "Give a did:artifact or choose a file");
      return;
    }
    void busy(form, "artifact-status", "Looking up the artifact's evidence…", async () => {
      let record;
      try {
        record = await fetchArtifactTrust(did, readOptions());
      } catch (error) {
        const code = error instanceof AtsClientError ? error.code : "NETWORK_ERROR";
        const verdict = evaluateArtifactTrust(undefined);
        result.replaceChildren(
          renderVerdict({ ...verdict, failure: { code } }),
          h("p", { class: "box bad", id: "artifact-error" }, `The lookup failed: ${describeError(error)}`),
        );
        throw error;
      }
      const verdict = evaluateArtifactTrust(record, { publisherDid });
      result.replaceChildren(
        renderVerdict(verdict),
        h("dl", { id: "artifact-summary" },
          h("dt", {}, "Artifact"), h("dd", {}, h("code", {}, record.artifactDid)),
          h("dt", {}, "Candidates read"), h("dd", {}, String(record.summary.totalQueried)),
          h("dt", {}, "Verified"), h("dd", {}, String(record.summary.totalVerified)),
          h("dt", {}, "Excluded"), h("dd", {}, `${record.summary.totalExcluded} (revoked, expired, unapproved issuer, unauthorized or malformed)`)),
        ...GROUPS.map(([key, title]) =>
          h("section", { class: "group", "data-group": key, "aria-label": title },
            h("h3", {}, `${title} (${record[key].length})`),
            record[key].length === 0 ? h("p", {}, "None.") : record[key].map(itemCard))
        ),
      );
      return `Checked ${did}`;
    });
  });
}
