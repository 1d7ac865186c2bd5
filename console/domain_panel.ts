/** The "Check a domain" panel: what discovery queried, the controllers found, what is missing and the TXT record to publish. */
import type { DiscoveryRecord, EvidenceItem } from "../domain/discovery/mod.ts";
import { controllerTxtRecordFor, discoverControllers } from "../client/mod.ts";
import { readOptions } from "./_chain.ts";
import { h, byId, CHAIN_ID, describeError, busy, copyButton, siteOf } from "./_dom.ts";

const STATUS_TEXT: Record<EvidenceItem["status"], string> = {
  found: "Found",
  "not-found": "Nothing found",
  unavailable: "Lookup failed",
  unsupported: "Not looked up",
};

function walletDidOf(input: string): string | undefined {
  const value = input.trim();
  if (value === "") return undefined;
  if (/^0x[0-9a-fA-F]{40}$/.test(value)) return `did:pkh:eip155:${CHAIN_ID}:${value.toLowerCase()}`;
  return value;
}

function evidenceCard(item: EvidenceItem): HTMLElement {
  const title = item.kind === "dns-txt" ? "DNS TXT" : item.kind === "did-json" ? "did.json" : "Your wallet";
  return h("article", { class: "card evidence", "data-kind": item.kind, "data-status": item.status },
    h("h4", {}, `${title}: `, h("code", {}, item.location), h("span", { class: `badge ${item.status}` }, STATUS_TEXT[item.status])),
    item.error ? h("p", {}, `Why: ${item.error}`) : null,
    item.records && item.records.length > 0
      ? [h("p", {}, "TXT records at this name:"), h("ul", { class: "records" }, item.records.map((r) => h("li", {}, h("code", {}, r))))]
      : null,
    item.notes && item.notes.length > 0 ? h("ul", { class: "notes" }, item.notes.map((n) => h("li", {}, n))) : null,
    item.keys.length > 0 ? [h("p", {}, "Controllers read here:"), h("ul", {}, item.keys.map((k) => h("li", {}, h("code", {}, k))))] : null,
  );
}

function missingSentences(record: DiscoveryRecord): string[] {
  const out: string[] = [];
  for (const item of record.evidence) {
    if (item.status === "unavailable") out.push(`${item.location} could not be checked (${item.error ?? "lookup failed"}); this is a failure, not an empty answer.`);
    else if (item.status === "not-found") out.push(`${item.location} publishes no controller.`);
  }
  if (record.controllerKeys.length === 0 && !record.evidence.some((e) => e.status === "unavailable")) {
    out.push("No source names a controller: publish a TXT record (below) or a did.json.");
  }
  return out;
}

function renderDomain(record: DiscoveryRecord, walletInput: string): HTMLElement[] {
  const out: HTMLElement[] = [
    h("dl", {}, h("dt", {}, "Subject"), h("dd", {}, h("code", { id: "domain-subject" }, record.subject.canonical)),
      h("dt", {}, "Domain"), h("dd", {}, record.domain ?? "—")),
  ];
  for (const warning of record.warnings) out.push(h("p", { class: "box warn" }, warning));
  out.push(h("h3", {}, "What was queried"));
  out.push(h("div", { id: "domain-evidence" }, record.evidence.map(evidenceCard)));
  out.push(h("h3", {}, `Controllers found (${record.controllerKeys.length})`));
  out.push(record.controllerKeys.length === 0
    ? h("p", { id: "domain-controllers" }, "None.")
    : h("ul", { id: "domain-controllers" }, record.controllerKeys.map((k) =>
      h("li", {}, h("code", {}, k.id), ` — ${k.label}, from ${k.sources.join(" and ")}`))));
  const missing = missingSentences(record);
  if (missing.length > 0) {
    out.push(h("h3", {}, "What is missing"));
    out.push(h("ul", { id: "domain-missing" }, missing.map((m) => h("li", {}, m))));
  }
  const walletDid = walletDidOf(walletInput);
  if (walletDid !== undefined && record.domain !== null) {
    out.push(h("h3", {}, "Publish your wallet"));
    const txt = controllerTxtRecordFor(record.subject.canonical, walletDid);
    if (!txt.ok) {
      out.push(h("p", { class: "box bad" }, `${txt.code}: ${txt.message}`));
    } else {
      const address = /0x[0-9a-f]{40}$/.exec(txt.value.value)?.[0];
      const published = address !== undefined && record.controllerKeys.some((k) => k.id.toLowerCase().endsWith(address));
      out.push(h("div", { class: "card record", id: "domain-publish" },
        published
          ? h("p", { class: "box good" }, "This wallet is already published as a controller.")
          : h("p", {}, "Add this TXT record at your DNS provider (it may take a while to be seen):"),
        h("p", {}, "Name"),
        h("div", { class: "buttons" }, h("code", { id: "publish-name" }, txt.value.name), copyButton(txt.value.name, "record name")),
        h("p", {}, "Value"),
        h("div", { class: "buttons" }, h("code", { id: "publish-value" }, txt.value.value), copyButton(txt.value.value, "record value")),
      ));
    }
  }
  return out;
}

export function setUpDomain(): void {
  const form = byId<HTMLFormElement>("domain-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    // A pasted address of the site names its domain (it was refused as "did:web must name a domain").
    const subject = siteOf(byId<HTMLInputElement>("domain-input").value);
    const wallet = byId<HTMLInputElement>("domain-wallet").value;
    const result = byId("domain-result");
    result.replaceChildren();
    void busy(form, "domain-status", `Looking up ${subject}…`, async () => {
      try {
        const record = await discoverControllers(subject, readOptions());
        result.replaceChildren(...renderDomain(record, wallet));
        const failed = record.evidence.filter((item) => item.status === "unavailable").length;
        if (failed > 0) return { warn: `Checked ${subject}: ${failed} lookup${failed === 1 ? "" : "s"} failed, see below` };
      } catch (error) {
        result.replaceChildren(h("p", { class: "box bad", id: "domain-error" }, `The lookup failed, so nothing can be said about this domain. ${describeError(error)}`));
        throw error;
      }
      return `Checked ${subject}`;
    });
  });
}
