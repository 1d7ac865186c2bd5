/** The "Attestations" panel: by subject, attester and schema (decisions §24), a page at a time, on the picked chain (§30). */
import { fetchTrustAnchors, listAttestations } from "../client/mod.ts";
import { onChainChange, pickedChain, readOptions } from "./_chain.ts";
import { h, byId, busy, CHAIN_ID, seconds } from "./_dom.ts";

/** The schema choices of the picked chain's anchors. */
function fillSchemas(select: HTMLSelectElement): void {
  const chainId = pickedChain().chainId;
  void fetchTrustAnchors({ url: "/v1/trust-anchors" }).then((anchors) => {
    const chain = (anchors.chains[`eip155:${chainId}`] ?? anchors.chains[String(chainId)]) as { schemas?: Record<string, unknown> } | undefined;
    const names = Object.keys(chain?.schemas ?? {}).sort();
    const kept = select.value;
    // The page's own choices stay when the anchors name none for its chain; another chain shows only its own.
    if (names.length > 0 || chainId !== CHAIN_ID) select.replaceChildren(h("option", { value: "" }, "Any schema"), ...names.map((n) => h("option", { value: n }, n)));
    select.value = names.includes(kept) ? kept : names.includes("user-review") ? "user-review" : "";
  }).catch(() => undefined);
}

export function setUpAttestations(): void {
  const form = byId<HTMLFormElement>("attestations-form");
  const select = byId<HTMLSelectElement>("attestations-schema");
  fillSchemas(select);
  let cursor: string | null = null;
  // A cursor is bound to its chain: another chain starts the list again.
  onChainChange(() => {
    cursor = null;
    byId("attestations-result").replaceChildren();
    byId("attestations-status").textContent = "";
    fillSchemas(select);
  });
  const load = (more: boolean) => {
    const given = (value: string) => (value === "" ? undefined : value);
    const filters = {
      subject: given(byId<HTMLInputElement>("attestations-subject").value.trim()),
      attester: given(byId<HTMLInputElement>("attestations-attester").value.trim()),
      schema: given(select.value),
    };
    const result = byId("attestations-result");
    if (!more) result.replaceChildren();
    void busy(form, "attestations-status", "Reading attestations…", async () => {
      if (Object.values(filters).every((v) => v === undefined)) return { warn: "Give a subject, an attester or a schema" };
      const page = await listAttestations({ ...filters, limit: 25, cursor: more ? cursor ?? undefined : undefined }, readOptions());
      cursor = page.nextCursor;
      result.querySelector("#attestations-more")?.remove();
      if (!more && page.items.length === 0) {
        const what = [filters.schema ?? "", "attestations", page.subject ? `about ${page.subject}` : "", filters.attester ? `by ${filters.attester}` : ""];
        result.append(h("p", {}, `No ${what.filter((w) => w !== "").join(" ")}.`));
      }
      for (const item of page.items) {
        const a = item.attestation;
        result.append(h("article", { class: "card item" },
          h("h4", {}, `${a.schemaName ?? a.schema}${item.revoked ? " (revoked)" : ""}`),
          h("dl", {},
            h("dt", {}, "Attester"), h("dd", {}, a.attester),
            h("dt", {}, "Recipient"), h("dd", {}, a.recipient),
            h("dt", {}, "Attested"), h("dd", {}, seconds(a.time)),
            Object.entries(a.data).flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, typeof v === "string" ? v : JSON.stringify(v))]),
            h("dt", {}, "UID"), h("dd", {}, a.uid))));
      }
      if (cursor !== null) {
        const button = h("button", { type: "button", id: "attestations-more", class: "secondary" }, "Show more");
        button.addEventListener("click", () => load(true));
        result.append(button);
      }
      // The cards on the page, this page's and the ones before it ("Show more" said "2 shown" under 27 cards).
      return `${result.querySelectorAll("article").length} shown`;
    });
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    load(false);
  });
}
