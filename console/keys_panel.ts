/** The "Keys" panel: anyone's key status, and the account's signing keys with their trust per subject and the next step. */
import { controllerTxtRecordFor, fetchKeyStatus, type KeyStatusRecord, listSigningKeys, type ListedSigningKey, nextStep, registerSigningKey, writeThroughRelay, requestWitness } from "../client/mod.ts";
import { needSigner } from "./_session.ts";
import { readOptions } from "./_chain.ts";
import { h, byId, api, setStatus, busy, copyButton, seconds, subjectDidOf, writtenThenRefreshed } from "./_dom.ts";

const TRUST_TEXT: Record<string, string> = {
  none: "none: nothing ties the key to the service",
  basic: "basic: the service's DNS TXT or did.json names the key now",
  intermediate: "intermediate: a controller witness of the key",
  advanced: "advanced: a witness and an active key binding",
};

function renderKeyStatus(record: KeyStatusRecord): HTMLElement {
  const w = record.controllerWitness;
  const b = record.keyBinding;
  return h("article", { class: "card", id: "key-check-card", "data-status": record.status, "data-trust": record.trustLevel },
    h("p", { class: `box ${record.trustLevel === "advanced" && record.status === "active" ? "good" : record.trustLevel === "none" ? "bad" : "warn"}` },
      h("strong", {}, `Status ${record.status}, trust ${record.trustLevel}`), ` as of ${seconds(record.at)}`),
    h("dl", {},
      h("dt", {}, "Service"), h("dd", {}, h("code", {}, record.subjectDid)),
      h("dt", {}, "Key"), h("dd", {}, h("code", {}, record.keyDid)),
      h("dt", {}, "Trust"), h("dd", {}, TRUST_TEXT[record.trustLevel] ?? record.trustLevel),
      h("dt", {}, "DNS / did.json"), h("dd", {}, record.endpointEvidence.found
        ? `names the key (${record.endpointEvidence.sources.join(", ")}), checked ${seconds(record.endpointEvidence.checkedAt)}`
        : `does not name the key, checked ${seconds(record.endpointEvidence.checkedAt)}`),
      h("dt", {}, "Controller witness"), h("dd", {}, w === null ? "none" : `${w.uid}, by ${w.attester}, observed ${seconds(w.observedAt)}`),
      h("dt", {}, "Key binding"), h("dd", {}, b === null
        ? "none"
        : `${b.uid}, by ${b.attester}, purpose ${b.keyPurpose.join(", ") || "any"}${b.revocationTime > 0 ? `, revoked ${seconds(b.revocationTime)}` : ""}${b.expiresAt > 0 ? `, expires ${seconds(b.expiresAt)}` : ""}`)));
}

/** What raises this key's trust for this subject, with the button that does it where the console can. */
function nextStepOf(key: ListedSigningKey, subjectDid: string, trust: { status: string; trustLevel: string }): (HTMLElement | string)[] {
  const step = nextStep(trust as Parameters<typeof nextStep>[0]);
  if (step === null) return ["Nothing more: the key is witnessed and bound."];
  if (step === "publish-txt") {
    const txt = controllerTxtRecordFor(subjectDid, key.keyDid);
    // A wallet's did:pkh has no DNS name nor did.json: "publish it in the did.json" pointed nowhere.
    if (!txt.ok && subjectDid.startsWith("did:pkh:")) {
      return ["A wallet's did:pkh has no DNS records nor did.json to publish the key in: bind it with a key binding written from that wallet."];
    }
    if (!txt.ok) return ["Publish the key in the subject's did.json, or write a key binding from the subject's wallet."];
    return [
      "Publish this TXT record: ",
      h("code", { class: "key-txt-name" }, txt.value.name), " ", h("code", { class: "key-txt-value" }, txt.value.value), " ",
      copyButton(txt.value.value, "record value"),
    ];
  }
  if (step === "request-witness") {
    const button = h("button", { type: "button", class: "secondary key-witness" }, "Request witness");
    button.addEventListener("click", () =>
      void busy(null, "key-status", "Checking the records and writing the witness…", async () => {
        needSigner();
        const result = await requestWitness({ subjectDid, controllerDid: key.keyDid }, api);
        await refreshKeys();
        return `Witness written: uid ${result.uid}`;
      }));
    return ["Ask the service to witness the published key (one sponsored write): ", button];
  }
  const button = h("button", { type: "button", class: "secondary key-bind" }, "Write key binding");
  button.addEventListener("click", () =>
    void busy(null, "key-status", "Preparing the key binding…", async () => {
      const wallet = needSigner();
      const steps = { nonce: "Reading your EAS nonce…", sign: "Sign the key binding in your wallet…", submit: "Sending through the relay…" };
      const result = await writeThroughRelay({
        schemaName: "key-binding",
        data: {
          subject: subjectDid,
          keyId: key.keyDid,
          publicKeyJwk: "",
          keyPurpose: ["assertionMethod"],
          proofs: [],
          issuedAt: Math.floor(Date.now() / 1000),
          effectiveAt: 0,
          expiresAt: 0,
        },
        attester: wallet.address,
        sign: (typedData) => wallet.signTypedData(typedData),
        subjectDid,
        onProgress: (s) => setStatus("key-status", "progress", steps[s]),
      }, api);
      return await writtenThenRefreshed(`Key binding written: uid ${result.uid}`, refreshKeys);
    }));
  return ["Bind the key from your wallet through the private relay (one sponsored write): ", button];
}

export async function refreshKeys(): Promise<void> {
  const keys = await listSigningKeys({}, api);
  byId("keys-signed-out").hidden = true;
  byId("keys-panel").hidden = false;
  byId("key-list").replaceChildren(keys.length === 0
    ? h("p", { class: "help", id: "keys-none" }, "No signing keys yet.")
    : h("div", { id: "keys" }, keys.map((key) =>
      h("article", { class: "card signing-key", "data-key": key.keyDid },
        h("h4", {}, key.displayName, " ", h("span", { class: "badge" }, key.keyType)),
        h("p", {}, h("code", {}, key.keyDid)),
        key.tags.length > 0 ? h("p", { class: "help" }, `Tags: ${key.tags.join(", ")}`) : null,
        key.notes ? h("p", { class: "help key-notes" }, key.notes) : null,
        key.subjects === null
          ? h("p", { class: "box warn" }, `Trust could not be checked now (${key.subjectsError?.code ?? "NETWORK_ERROR"}); nothing is guessed.`)
          : h("ul", { class: "key-subjects" }, key.subjects.map((s) =>
            h("li", { "data-subject": s.subjectDid, "data-status": s.status, "data-trust": s.trustLevel },
              h("code", {}, s.subjectDid), ` — ${s.status}, trust ${s.trustLevel}. `,
              h("span", { class: "next-step" }, nextStepOf(key, s.subjectDid, s))))),
      ))));
}

/** Forgets the account the panel showed (signed out, or another account signed in): its keys, status line and form. */
export function forgetKeys(): void {
  byId("key-list").replaceChildren();
  setStatus("key-status", "", "");
  byId<HTMLFormElement>("key-form").reset();
  byId("keys-panel").hidden = true;
  byId("keys-signed-out").hidden = false;
}

export function setUpKeys(): void {
  const checkForm = byId<HTMLFormElement>("key-check-form");
  checkForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const result = byId("key-check-result");
    result.replaceChildren();
    const atText = byId<HTMLInputElement>("key-check-at").value;
    const at = atText === "" ? undefined : Math.floor(Date.parse(`${atText}Z`) / 1000);
    void busy(checkForm, "key-check-status", "Reading the chain and the service's records…", async () => {
      const record = await fetchKeyStatus({
        subjectDid: subjectDidOf(byId<HTMLInputElement>("key-check-subject").value),
        keyDid: byId<HTMLInputElement>("key-check-key").value.trim(),
        at,
      }, readOptions());
      result.replaceChildren(renderKeyStatus(record));
      return `Checked: ${record.status}, trust ${record.trustLevel}`;
    });
  });
  const keyForm = byId<HTMLFormElement>("key-form");
  keyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(keyForm, "key-status", "Registering the key…", async () => {
      const tags = byId<HTMLInputElement>("key-tags").value.split(",").map((t) => t.trim()).filter((t) => t !== "");
      const notes = byId<HTMLTextAreaElement>("key-notes").value.trim();
      const key = await registerSigningKey({
        keyDid: byId<HTMLInputElement>("key-did").value.trim(),
        keyType: byId<HTMLSelectElement>("key-type").value as "attestation" | "service-signing",
        displayName: byId<HTMLInputElement>("key-name").value,
        tags,
        notes: notes === "" ? null : notes,
      }, api);
      return await writtenThenRefreshed(`${key.created ? "Registered" : "Updated"} ${key.displayName}`, refreshKeys);
    });
  });
}
