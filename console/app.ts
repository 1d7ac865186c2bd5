/**
 * The console's script, bundled for browsers at build time (console/assets.ts). It uses only the browser-ready
 * client helpers (client/mod.ts). Everything that came from the network is put on the page as text
 * (`textContent` through {@link h}), never as HTML.
 */
import {
  addSubject,
  type AnnouncedWallet,
  type ArtifactTrustVerdict,
  artifactDidOfBytes,
  AtsClientError,
  controllerTxtRecordFor,
  createApiClient,
  deleteApiClient,
  discoverControllers,
  evaluateArtifactTrust,
  fetchAccount,
  fetchArtifactTrust,
  fetchTrustAnchors,
  fetchKeyStatus,
  type KeyStatusRecord,
  listSigningKeys,
  type ListedSigningKey,
  nextStep,
  normalizeDid,
  registerSigningKey,
  writeThroughRelay,
  listApiClients,
  listAttestations,
  listAuthorizations,
  listSubjects,
  removeSubject,
  revokeAuthorization,
  requestWalletAddress,
  requestWitness,
  type ServiceOptions,
  signInWithEthereum,
  signOutSession,
  verifySubjectOwnership,
  walletSigner,
  type WalletSigner,
  watchWallets,
  writeReview,
  createWebhook,
  deleteWebhook,
  listWebhookDeliveries,
  listWebhooks,
  rotateWebhookSecret,
  sendTestWebhook,
  updateWebhook,
  type WebhookDeliveryView,
  type WebhookEndpointView,
  type WebhookEventType,
} from "../client/mod.ts";
import type { ArtifactTrustItem } from "../domain/artifact_trust/mod.ts";
import type { DiscoveryRecord, EvidenceItem } from "../domain/discovery/mod.ts";

// ---------------------------------------------------------------------------------------------------------------
// Small DOM helpers: text only

type Child = Node | string | number | null | undefined | false;

/** Builds an element; strings become text nodes, never markup. */
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | undefined> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) element.setAttribute(name, value);
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return element;
}

function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`Missing #${id}`);
  return element as T;
}

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
const CHAIN_ID = Number(meta("ats-chain-id"));
const api: ServiceOptions = { baseUrl: "" };

type StatusKind = "progress" | "ok" | "warn" | "error" | "";

function setStatus(id: string, kind: StatusKind, text: string): void {
  const element = byId(id);
  element.className = `status ${kind}`;
  element.textContent = text;
}

/** A sentence for any failure: the service's code and message (and details), or the wallet's. */
function describeError(error: unknown): string {
  if (error instanceof AtsClientError) {
    const details = (error.body as { details?: unknown } | undefined)?.details;
    return `${error.code}: ${error.message}${typeof details === "string" && details !== "" ? ` (${details})` : ""}`;
  }
  return `UNEXPECTED: ${error instanceof Error ? error.message : String(error)}`;
}

/** A finished step that still needs the reader's attention (a lookup failed), shown as a warning, not a success. */
type Warning = { readonly warn: string };

/** Runs a form's work with its submit button disabled and the status line kept up to date. */
async function busy(form: HTMLFormElement | null, statusId: string, progress: string, work: () => Promise<string | Warning | void>): Promise<void> {
  const buttons = form ? Array.from(form.querySelectorAll("button")) : [];
  for (const button of buttons) button.disabled = true;
  setStatus(statusId, "progress", progress);
  try {
    const done = await work();
    if (typeof done === "object") setStatus(statusId, "warn", done.warn);
    else setStatus(statusId, done ? "ok" : "", done ?? "");
  } catch (error) {
    setStatus(statusId, "error", describeError(error));
  } finally {
    for (const button of buttons) button.disabled = false;
  }
}

function copyButton(text: string, what: string): HTMLButtonElement {
  const button = h("button", { type: "button", class: "secondary", "aria-label": `Copy ${what}` }, "Copy");
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Select and copy by hand";
    }
    setTimeout(() => (button.textContent = "Copy"), 2000);
  });
  return button;
}

const seconds = (value: unknown) => {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? new Date(n * 1000).toISOString().replace(".000Z", "Z") : "—";
};

// ---------------------------------------------------------------------------------------------------------------
// Tabs

const VIEWS = ["domain", "artifact", "attestations", "account", "keys", "webhooks"] as const;

function showView(): void {
  const wanted = location.hash.slice(1);
  const view = (VIEWS as readonly string[]).includes(wanted) ? wanted : "domain";
  for (const section of Array.from(document.querySelectorAll<HTMLElement>("[data-view]"))) section.hidden = section.dataset.view !== view;
  for (const link of Array.from(document.querySelectorAll<HTMLAnchorElement>("nav a[data-tab]"))) {
    if (link.dataset.tab === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Check a domain

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

function setUpDomain(): void {
  const form = byId<HTMLFormElement>("domain-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const subject = byId<HTMLInputElement>("domain-input").value.trim();
    const wallet = byId<HTMLInputElement>("domain-wallet").value;
    const result = byId("domain-result");
    result.replaceChildren();
    void busy(form, "domain-status", `Looking up ${subject}…`, async () => {
      try {
        const record = await discoverControllers(subject, api);
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

// ---------------------------------------------------------------------------------------------------------------
// Check an artifact

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

function setUpArtifact(): void {
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
        record = await fetchArtifactTrust(did, api);
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

// ---------------------------------------------------------------------------------------------------------------
// Attestations: by subject, attester and schema (decisions §24)

function setUpAttestations(): void {
  const form = byId<HTMLFormElement>("attestations-form");
  const select = byId<HTMLSelectElement>("attestations-schema");
  void fetchTrustAnchors({ url: "/v1/trust-anchors" }).then((anchors) => {
    const chain = anchors.chains[`eip155:${CHAIN_ID}`] as { schemas?: Record<string, unknown> } | undefined;
    const names = Object.keys(chain?.schemas ?? {}).sort();
    if (names.length > 0) select.replaceChildren(h("option", { value: "" }, "Any schema"), ...names.map((n) => h("option", { value: n }, n)));
    select.value = names.includes("user-review") ? "user-review" : "";
  }).catch(() => undefined);
  let cursor: string | null = null;
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
      const page = await listAttestations({ ...filters, limit: 25, cursor: more ? cursor ?? undefined : undefined }, api);
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
      return `${page.items.length} shown`;
    });
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    load(false);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Account: sign in, usage, subjects, witness, review

let signer: WalletSigner | undefined;
const walletDid = () => (signer ? `did:pkh:eip155:${CHAIN_ID}:${signer.address.toLowerCase()}` : "");

function renderWallets(wallets: readonly AnnouncedWallet[]): void {
  const list = byId("wallet-list");
  if (wallets.length === 0) {
    list.replaceChildren(h("p", { class: "help", id: "no-wallet" }, "No wallet found in this browser. Install a browser wallet and reload."));
    return;
  }
  list.replaceChildren(...wallets.map((wallet) => {
    const button = h("button", { type: "button", "data-wallet": wallet.info.rdns || wallet.info.uuid }, `Sign in with ${wallet.info.name}`);
    button.addEventListener("click", () => void signIn(wallet));
    return button;
  }));
}

async function signIn(wallet: AnnouncedWallet): Promise<void> {
  await busy(null, "account-status", `Asking ${wallet.info.name} for an account…`, async () => {
    const address = await requestWalletAddress(wallet.provider);
    const next = walletSigner(wallet.provider, address);
    setStatus("account-status", "progress", "Sign the sign-in message in your wallet…");
    await signInWithEthereum({
      walletDid: `did:pkh:eip155:${CHAIN_ID}:${address}`,
      domain: location.host,
      uri: `${location.origin}/`,
      signMessage: next.signMessage,
    }, api);
    signer = next;
    const domainWallet = byId<HTMLInputElement>("domain-wallet");
    if (domainWallet.value === "") domainWallet.value = address;
    await refreshAccount();
    return `Signed in as ${address}`;
  });
}

async function refreshAccount(): Promise<void> {
  const [overview, subjects] = await Promise.all([fetchAccount(api), listSubjects(api)]);
  const s = overview.subscription;
  byId("account-summary").replaceChildren(h("dl", { id: "account-usage" },
    h("dt", {}, "Wallet"), h("dd", {}, h("code", {}, signer?.address ?? overview.wallets[0]?.address ?? "—")),
    h("dt", {}, "Plan"), h("dd", { id: "account-plan" }, `${s.plan} (${s.status})`),
    h("dt", {}, "Sponsored writes"), h("dd", { id: "account-writes" }, `${s.sponsoredWritesUsedCurrentYear} of ${s.annualSponsoredWriteLimit} used this year`),
    h("dt", {}, "Premium reads"), h("dd", {}, `${s.premiumReadsUsedCurrentYear} of ${s.annualPremiumReadLimit} used this year`),
    h("dt", {}, "Period ends"), h("dd", {}, s.entitlementPeriodEnd),
    h("dt", {}, "Default subject"), h("dd", {}, overview.primarySubject?.canonicalDid ?? "—"),
  ));
  byId("subject-list").replaceChildren(h("ul", { id: "subjects" }, subjects.map((subject) => {
    const remove = h("button", { type: "button", class: "secondary", "aria-label": `Remove ${subject.canonicalDid}` }, "Remove");
    remove.addEventListener("click", () =>
      void busy(null, "subject-status", `Removing ${subject.canonicalDid}…`, async () => {
        await removeSubject(subject.id, api);
        await refreshAccount();
        return `Removed ${subject.canonicalDid}`;
      }));
    return h("li", { "data-did": subject.canonicalDid },
      h("code", {}, subject.canonicalDid),
      subject.displayName ? ` “${subject.displayName}”` : "",
      ` — proven by ${subject.ownership.method}${subject.isDefault ? ", default" : ""} `,
      remove);
  })));
  await refreshApiClients();
  await refreshAuthorizations();
  byId("account-panel").hidden = false;
  await refreshKeys();
  await refreshWebhooks();
}

/** The account's API clients, each with a delete button (its tokens stop working at once). */
async function refreshApiClients(): Promise<void> {
  let clients: Awaited<ReturnType<typeof listApiClients>>;
  try {
    clients = await listApiClients(api);
  } catch (error) {
    // A service with OAUTH=off has no API clients: the rest of the account still shows.
    byId("api-client-list").replaceChildren(h("p", { class: "help", id: "api-clients-none" }, `API clients are not available: ${describeError(error)}`));
    return;
  }
  byId("api-client-list").replaceChildren(clients.length === 0
    ? h("p", { class: "help", id: "api-clients-none" }, "No API clients yet.")
    : h("ul", { id: "api-clients" }, clients.map((client) => {
      const remove = h("button", { type: "button", class: "secondary", "aria-label": `Delete ${client.client_name ?? client.client_id}` }, "Delete");
      remove.addEventListener("click", () =>
        void busy(null, "api-client-status", `Deleting ${client.client_name ?? client.client_id}…`, async () => {
          await deleteApiClient(client.client_id, api);
          byId("api-client-secret").hidden = true;
          await refreshApiClients();
          return `Deleted ${client.client_name ?? client.client_id}; its tokens no longer work`;
        }));
      return h("li", { "data-client-id": client.client_id },
        h("strong", {}, client.client_name ?? "(unnamed)"), " ", h("code", {}, client.client_id), ` — ${client.scope} `, remove);
    })));
}

/** The applications this account authorised on the consent page, each with a revoke button (their tokens stop at once). */
async function refreshAuthorizations(): Promise<void> {
  let authorized: Awaited<ReturnType<typeof listAuthorizations>>;
  try {
    authorized = await listAuthorizations(api);
  } catch (error) {
    byId("authorization-list").replaceChildren(h("p", { class: "help", id: "authorizations-none" }, `Authorised applications are not available: ${describeError(error)}`));
    return;
  }
  byId("authorization-list").replaceChildren(authorized.length === 0
    ? h("p", { class: "help", id: "authorizations-none" }, "No application holds access to this account.")
    : h("ul", { id: "authorizations" }, authorized.map((app) => {
      const name = app.client_name ?? app.client_id;
      const revoke = h("button", { type: "button", class: "secondary", "aria-label": `Revoke ${name}` }, "Revoke");
      revoke.addEventListener("click", () =>
        void busy(null, "authorization-status", `Revoking ${name}…`, async () => {
          await revokeAuthorization(app.client_id, api);
          await refreshAuthorizations();
          return `Revoked ${name}; its tokens no longer work`;
        }));
      return h("li", { "data-client-id": app.client_id },
        h("strong", {}, app.client_name ?? "(unnamed)"), " ", h("code", {}, app.client_id),
        ` — ${app.scope}; authorised ${app.last_authorized_at.slice(0, 10)} `, revoke);
    })));
}

/** The consent page of /oauth/authorize (decisions §19): wallet sign-in when no session is present, then the page again. */
function setUpConsent(): void {
  const list = document.getElementById("wallet-list");
  if (list === null) return;
  const render = (wallets: readonly AnnouncedWallet[]) => {
    if (wallets.length === 0) {
      list.replaceChildren(h("p", { class: "help", id: "no-wallet" }, "No wallet found in this browser. Install a browser wallet and reload."));
      return;
    }
    list.replaceChildren(...wallets.map((wallet) => {
      const button = h("button", { type: "button", "data-wallet": wallet.info.rdns || wallet.info.uuid }, `Sign in with ${wallet.info.name}`);
      button.addEventListener("click", () =>
        void busy(null, "account-status", `Asking ${wallet.info.name} for an account…`, async () => {
          const address = await requestWalletAddress(wallet.provider);
          const next = walletSigner(wallet.provider, address);
          setStatus("account-status", "progress", "Sign the sign-in message in your wallet…");
          await signInWithEthereum({ walletDid: `did:pkh:eip155:${CHAIN_ID}:${address}`, domain: location.host, uri: `${location.origin}/`, signMessage: next.signMessage }, api);
          location.reload();
          return `Signed in as ${address}`;
        }));
      return button;
    }));
  };
  render([]);
  watchWallets(window, render);
}

function needSigner(): WalletSigner {
  if (signer === undefined) throw new AtsClientError("UNAUTHENTICATED", "Sign in with a wallet first");
  return signer;
}

function setUpAccount(): void {
  renderWallets([]);
  watchWallets(window, renderWallets);
  // A session from an earlier visit: show it; signing again needs the wallet.
  void refreshAccount().then(
    () => setStatus("account-status", "", "Signed in from an earlier visit; sign in again with your wallet to sign."),
    () => undefined,
  );
  byId("sign-out").addEventListener("click", () =>
    void busy(null, "account-status", "Signing out…", async () => {
      await signOutSession(api);
      signer = undefined;
      byId("account-panel").hidden = true;
      byId("keys-panel").hidden = true;
      byId("keys-signed-out").hidden = false;
      byId("webhooks-panel").hidden = true;
      byId("webhooks-signed-out").hidden = false;
      return "Signed out";
    }));

  const subjectForm = byId<HTMLFormElement>("subject-form");
  const subjectDid = () => byId<HTMLInputElement>("subject-did").value.trim();
  byId("subject-verify").addEventListener("click", () =>
    void busy(subjectForm, "subject-status", "Checking ownership…", async () => {
      const proof = await verifySubjectOwnership({ subjectDid: subjectDid(), connectedWalletDid: walletDid() || needSigner().address }, api);
      if (proof.ok) return `Verified: your wallet owns ${proof.subjectDid} (method ${proof.method})`;
      throw new AtsClientError("OWNERSHIP_NOT_PROVEN", proof.error ?? "Not proven", { body: { details: proof.details } });
    }));
  subjectForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(subjectForm, "subject-status", "Proving ownership and adding the subject…", async () => {
      const displayName = byId<HTMLInputElement>("subject-name").value.trim() || undefined;
      const subject = await addSubject({ did: subjectDid(), displayName }, api);
      await refreshAccount();
      return `Added ${subject.canonicalDid} (proven by ${subject.ownership.method})`;
    });
  });

  const clientForm = byId<HTMLFormElement>("api-client-form");
  clientForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(clientForm, "api-client-status", "Creating the API client…", async () => {
      const scope = Array.from(clientForm.querySelectorAll<HTMLInputElement>("input[name=scope]:checked"), (box) => box.value).join(" ");
      const created = await createApiClient({ client_name: byId<HTMLInputElement>("api-client-name").value.trim(), scope }, api);
      const secret = byId("api-client-secret");
      secret.replaceChildren(
        h("p", {}, "Copy the secret now: it is shown only this once."),
        h("dl", {},
          h("dt", {}, "client_id"), h("dd", {}, h("code", { id: "api-client-new-id" }, created.client_id)),
          h("dt", {}, "client_secret"), h("dd", {}, h("code", { id: "api-client-new-secret" }, created.client_secret), " ", copyButton(created.client_secret, "secret")),
          h("dt", {}, "Token endpoint"), h("dd", {}, h("code", {}, `${location.origin}/oauth/token`)),
        ),
      );
      secret.hidden = false;
      await refreshApiClients();
      return `Created ${created.client_name ?? created.client_id} (${created.scope})`;
    });
  });

  const witnessForm = byId<HTMLFormElement>("witness-form");
  witnessForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(witnessForm, "witness-status", "Checking the domain's records and writing the witness…", async () => {
      needSigner();
      const result = await requestWitness({ subjectDid: byId<HTMLInputElement>("witness-subject").value.trim(), controllerDid: walletDid() }, api);
      await refreshAccount();
      return `Witness written (${result.method}): uid ${result.uid}, transaction ${result.txHash}, block ${result.blockNumber}`;
    });
  });

  const reviewForm = byId<HTMLFormElement>("review-form");
  reviewForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(reviewForm, "review-status", "Preparing the review…", async () => {
      const wallet = needSigner();
      const steps = { nonce: "Reading your EAS nonce…", sign: "Sign the review in your wallet…", submit: "Sending through the relay…" };
      const txHash = byId<HTMLInputElement>("review-tx").value.trim();
      const proofType = byId<HTMLSelectElement>("review-tx-type").value as "tx-interaction" | "tx-encoded-value";
      const result = await writeReview({
        subject: byId<HTMLInputElement>("review-subject").value.trim(),
        ratingValue: Number(byId<HTMLSelectElement>("review-rating").value),
        reviewBody: byId<HTMLTextAreaElement>("review-body").value,
        transaction: txHash === ""
          ? undefined
          : { chainId: CHAIN_ID, txHash, proofType },
        attester: wallet.address,
        sign: (typedData) => wallet.signTypedData(typedData),
        onProgress: (step) => setStatus("review-status", "progress", steps[step]),
      }, api);
      await refreshAccount();
      const proof = txHash === "" ? "" : ` (with ${proofType} proof ${txHash.toLowerCase()})`;
      return `Review written${proof}: uid ${result.uid}, transaction ${result.txHash}, block ${result.blockNumber}`;
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Keys: anyone's key status; the account's signing keys with their trust per subject and the next step

const TRUST_TEXT: Record<string, string> = {
  none: "none: nothing ties the key to the service",
  basic: "basic: the service's DNS TXT or did.json names the key now",
  intermediate: "intermediate: a controller witness of the key",
  advanced: "advanced: a witness and an active key binding",
};

/** A subject typed by a person: a domain becomes its did:web. */
function subjectDidOf(input: string): string {
  const normalized = normalizeDid(input.trim());
  return normalized.ok ? normalized.value : input.trim();
}

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
      await refreshKeys();
      return `Key binding written: uid ${result.uid}`;
    }));
  return ["Bind the key from your wallet through the private relay (one sponsored write): ", button];
}

async function refreshKeys(): Promise<void> {
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
        key.notes ? h("p", { class: "help" }, key.notes) : null,
        key.subjects === null
          ? h("p", { class: "box warn" }, `Trust could not be checked now (${key.subjectsError?.code ?? "NETWORK_ERROR"}); nothing is guessed.`)
          : h("ul", { class: "key-subjects" }, key.subjects.map((s) =>
            h("li", { "data-subject": s.subjectDid, "data-status": s.status, "data-trust": s.trustLevel },
              h("code", {}, s.subjectDid), ` — ${s.status}, trust ${s.trustLevel}. `,
              h("span", { class: "next-step" }, nextStepOf(key, s.subjectDid, s))))),
      ))));
}

function setUpKeys(): void {
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
      }, api);
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
      await refreshKeys();
      return `${key.created ? "Registered" : "Updated"} ${key.displayName}`;
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Webhooks (decisions §22): the account's endpoints, an endpoint's recent deliveries, a test event

/** The endpoint whose deliveries are shown, its rows so far and the cursor of the next page. */
let shown: { endpoint: WebhookEndpointView; items: WebhookDeliveryView[]; cursor: string | null } | undefined;
/** Bumped whenever another endpoint is shown: a test event's watch stops when it no longer matches. */
let watching = 0;

type DeliveryState = "delivered" | "failed" | "retrying" | "pending";
const DELIVERY_STATE_TEXT: Record<DeliveryState, string> = { delivered: "Delivered", failed: "Failed", retrying: "Retrying", pending: "Queued" };

function deliveryState(d: WebhookDeliveryView): DeliveryState {
  if (d.deliveredAt !== null) return "delivered";
  if (d.failedAt !== null) return "failed";
  return d.attempts > 0 ? "retrying" : "pending";
}

/** An ISO 8601 time as a person reads it, in UTC. */
const when = (iso: string | null) => (iso === null ? "—" : iso.replace("T", " ").replace(/(\.\d+)?Z$/, " UTC"));

/** The last answer of a delivery: its status, or why there was none. */
const lastAnswer = (d: WebhookDeliveryView) => (d.lastStatus !== null ? `HTTP ${d.lastStatus}` : d.attempts === 0 ? "—" : "none (timeout or refused)");

function deliveryRow(d: WebhookDeliveryView): HTMLTableRowElement {
  const state = deliveryState(d);
  // A queued event has no time worth showing: it goes out at the next round, or once a disabled endpoint is enabled.
  const detail = state === "delivered" ? when(d.deliveredAt) : state === "failed" ? when(d.failedAt) : state === "retrying" ? `next attempt ${when(d.nextAttemptAt)}` : "";
  return h("tr", { "data-event-id": d.eventId, "data-state": state },
    h("td", { "data-label": "Event" }, h("code", {}, d.eventId)),
    h("td", { "data-label": "Type" }, h("code", {}, d.type)),
    h("td", { "data-label": "Attempts", class: "number" }, String(d.attempts)),
    h("td", { "data-label": "Last answer" }, lastAnswer(d)),
    h("td", { "data-label": "Outcome" }, h("span", {}, h("span", { class: `badge ${state}` }, DELIVERY_STATE_TEXT[state]), detail === "" ? null : h("span", { class: "when" }, detail))));
}

function renderDeliveries(): void {
  const target = byId("webhook-deliveries");
  if (shown === undefined) {
    target.replaceChildren(h("p", { class: "help" }, "Choose Deliveries on an endpoint, or send it a test event."));
    return;
  }
  const { endpoint, items, cursor } = shown;
  const refresh = h("button", { type: "button", class: "secondary", id: "webhook-deliveries-refresh" }, "Refresh");
  refresh.addEventListener("click", () => void busy(null, "webhook-status", "Reading the deliveries…", async () => {
    await showDeliveries(endpoint);
    return `Deliveries to ${endpoint.url} read`;
  }));
  const more = cursor === null ? null : h("button", { type: "button", class: "secondary", id: "webhook-deliveries-more" }, "Show more");
  more?.addEventListener("click", () => void busy(null, "webhook-status", "Reading more deliveries…", async () => {
    await showDeliveries(endpoint, true);
  }));
  target.replaceChildren(
    h("div", { class: "buttons" }, h("p", { class: "help" }, "To ", h("code", { id: "webhook-deliveries-url" }, endpoint.url), ", newest first."), refresh),
    items.length === 0
      ? h("p", { id: "webhook-deliveries-none" }, "No deliveries yet.")
      : h("table", { class: "deliveries", id: "webhook-delivery-table" },
        h("thead", {}, h("tr", {}, ["Event", "Type", "Attempts", "Last answer", "Outcome"].map((name) => h("th", { scope: "col" }, name)))),
        h("tbody", {}, items.map(deliveryRow))),
    ...(more === null ? [] : [more]),
  );
}

/** Reads an endpoint's deliveries (the first page, or the next with `more`) and shows them. */
async function showDeliveries(endpoint: WebhookEndpointView, more = false): Promise<WebhookDeliveryView[]> {
  if (shown?.endpoint.id !== endpoint.id) watching++;
  const page = await listWebhookDeliveries(endpoint.id, { limit: 10, cursor: more ? shown?.cursor ?? undefined : undefined }, api);
  const items = more && shown?.endpoint.id === endpoint.id ? [...shown.items, ...page.items] : page.items;
  shown = { endpoint, items, cursor: page.nextCursor };
  renderDeliveries();
  return page.items;
}

/**
 * Re-reads the deliveries until the test event's first attempt is known (delivered, or an answer that will be
 * retried) and says how it went. Stops when another endpoint is shown, or after a few minutes.
 */
async function watchTestEvent(endpoint: WebhookEndpointView, eventId: string): Promise<string | Warning | void> {
  const mine = watching;
  const started = Date.now();
  for (let wait = 250; Date.now() - started < 300_000; wait = Math.min(wait * 2, 5_000)) {
    await new Promise((resolve) => setTimeout(resolve, wait));
    if (mine !== watching) return;
    const items = await showDeliveries(endpoint).catch(() => undefined);
    if (mine !== watching) return;
    const delivery = items?.find((d) => d.eventId === eventId);
    if (delivery === undefined || deliveryState(delivery) === "pending") continue;
    const state = deliveryState(delivery);
    if (state === "delivered") return `Test event delivered to ${endpoint.url} (${lastAnswer(delivery)})`;
    return { warn: `Test event not delivered to ${endpoint.url}: last answer ${lastAnswer(delivery)}; ${state === "failed" ? "no more attempts" : `next attempt ${when(delivery.nextAttemptAt)}`}` };
  }
  return { warn: "The test event is still queued; Refresh to see its delivery" };
}

/**
 * The card that shows a secret once, with the reason it cannot be shown again: placed after the status line of the
 * action that made it (the form's, or the endpoints'), scrolled to and focused, so it is not missed.
 */
function showSecret(title: string, secret: string, note: string, after: string): void {
  const card = byId("webhook-secret");
  byId(after).after(card);
  const done = h("button", { type: "button", class: "secondary", id: "webhook-secret-done" }, "I have copied it");
  done.addEventListener("click", () => {
    card.hidden = true;
    card.replaceChildren();
  });
  card.replaceChildren(
    h("h4", {}, title),
    h("p", { class: "box warn", id: "webhook-secret-note" }, h("strong", {}, "Shown once: copy it now. "), note),
    h("div", { class: "buttons" }, h("code", { id: "webhook-new-secret", class: "secret-value" }, secret), copyButton(secret, "webhook secret")),
    h("p", { class: "help" }, "Receivers verify each delivery's webhook-signature with it (any Standard Webhooks library does)."),
    done,
  );
  card.hidden = false;
  card.scrollIntoView({ block: "nearest" });
  card.focus({ preventScroll: true });
}

function endpointCard(endpoint: WebhookEndpointView): HTMLElement {
  const action = (label: string, kind: string, aria: string, progress: string, work: () => Promise<string | Warning | void>) => {
    const button = h("button", { type: "button", class: `secondary webhook-${kind}`, "aria-label": `${aria} ${endpoint.url}` }, label);
    button.addEventListener("click", () => void busy(null, "webhook-status", progress, work));
    return button;
  };
  const test = action("Send test event", "test", "Send a test event to", "Queuing a test event…", async () => {
    const queued = await sendTestWebhook(endpoint.id, api);
    await showDeliveries(endpoint);
    if (endpoint.disabled) return { warn: `Test event queued; it is sent once ${endpoint.url} is enabled` };
    setStatus("webhook-status", "progress", `Sending test event ${queued.eventId} to ${endpoint.url}…`);
    return await watchTestEvent(endpoint, queued.eventId);
  });
  const deliveries = action("Deliveries", "deliveries", "Show the deliveries to", "Reading the deliveries…", async () => {
    await showDeliveries(endpoint);
    return `Deliveries to ${endpoint.url} read`;
  });
  const toggle = action(endpoint.disabled ? "Enable" : "Disable", "toggle", endpoint.disabled ? "Enable" : "Disable", endpoint.disabled ? "Enabling…" : "Disabling…", async () => {
    const updated = await updateWebhook(endpoint.id, { disabled: !endpoint.disabled }, api);
    await refreshWebhooks();
    return `${updated.disabled ? "Disabled" : "Enabled"} ${updated.url}`;
  });
  const rotate = action("Rotate secret", "rotate", "Rotate the secret of", "Rotating the secret…", async () => {
    const { secret } = await rotateWebhookSecret(endpoint.id, api);
    showSecret(`New secret of ${endpoint.url}`, secret, "The old secret keeps signing beside it for 24 hours (two signatures on each delivery), so switch your receiver within a day.", "webhook-status");
    return `Secret of ${endpoint.url} rotated`;
  });
  const remove = action("Delete", "delete", "Delete", "Deleting the endpoint…", async () => {
    await deleteWebhook(endpoint.id, api);
    if (shown?.endpoint.id === endpoint.id) {
      shown = undefined;
      watching++;
      renderDeliveries();
    }
    byId("webhook-secret").hidden = true;
    await refreshWebhooks();
    return `Deleted ${endpoint.url}; nothing more is sent to it`;
  });
  return h("article", { class: "card webhook", "data-id": endpoint.id, "data-disabled": String(endpoint.disabled) },
    h("h4", {}, h("code", {}, endpoint.url), " ", h("span", { class: `badge ${endpoint.disabled ? "disabled" : "enabled"}` }, endpoint.disabled ? "Disabled" : "Enabled")),
    endpoint.disabled
      ? h("p", { class: "box warn" }, "Nothing is sent to this endpoint while it is disabled (the service disables an endpoint whose deliveries all failed for 5 days). Enable it to send again.")
      : null,
    h("dl", {},
      h("dt", {}, "Events"), h("dd", { class: "webhook-events" }, endpoint.events.flatMap((e, i) => [i > 0 ? ", " : "", h("code", {}, e)])),
      h("dt", {}, "Subjects"), h("dd", { class: "webhook-subjects" }, endpoint.subjects.length === 0
        ? "none listed"
        : h("ul", {}, endpoint.subjects.map((s) => h("li", {}, h("code", {}, s))))),
      h("dt", {}, "Own subjects"), h("dd", { class: "webhook-own" }, endpoint.ownSubjects ? "yes: the subjects this account has proven" : "no"),
      h("dt", {}, "Created"), h("dd", {}, when(endpoint.createdAt)),
      h("dt", {}, "Id"), h("dd", {}, h("code", {}, endpoint.id))),
    h("div", { class: "buttons" }, test, deliveries, toggle, rotate, remove));
}

async function refreshWebhooks(): Promise<void> {
  let endpoints: WebhookEndpointView[];
  try {
    endpoints = await listWebhooks(api);
  } catch (error) {
    byId("webhook-list").replaceChildren(h("p", { class: "help", id: "webhooks-none" }, `Webhooks are not available: ${describeError(error)}`));
    byId("webhooks-signed-out").hidden = true;
    byId("webhooks-panel").hidden = false;
    return;
  }
  byId("webhooks-signed-out").hidden = true;
  byId("webhooks-panel").hidden = false;
  byId("webhook-list").replaceChildren(endpoints.length === 0
    ? h("p", { class: "help", id: "webhooks-none" }, "No endpoints yet: add one below.")
    : h("div", { id: "webhooks-list" }, endpoints.map(endpointCard)));
  // The endpoint shown keeps its deliveries, with its card's current state.
  const current = shown === undefined ? undefined : endpoints.find((e) => e.id === shown!.endpoint.id);
  if (shown !== undefined && current !== undefined) shown.endpoint = current;
}

/** A DID or a domain (made a did:web) as typed; anything else goes as typed, for the service to refuse by name. */
const watchedSubject = (input: string) => (input.startsWith("did:") || /^[A-Za-z0-9.-]+$/.test(input) ? subjectDidOf(input) : input);

function setUpWebhooks(): void {
  const form = byId<HTMLFormElement>("webhook-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(form, "webhook-form-status", "Checking the URL and adding the endpoint…", async () => {
      const events = Array.from(form.querySelectorAll<HTMLInputElement>("input[name=event]:checked"), (box) => box.value as WebhookEventType);
      if (events.length === 0) return { warn: "Tick at least one event" };
      const subjects = byId<HTMLTextAreaElement>("webhook-subjects").value.split(/[\n,]+/).map((s) => s.trim()).filter((s) => s !== "").map(watchedSubject);
      const created = await createWebhook({
        url: byId<HTMLInputElement>("webhook-url").value.trim(),
        events,
        subjects,
        ownSubjects: byId<HTMLInputElement>("webhook-own").checked,
      }, api);
      showSecret(`Secret of ${created.url}`, created.secret, "The service never shows it again; if it is lost, rotate the secret.", "webhook-form-status");
      form.reset();
      await refreshWebhooks();
      return `Added ${created.url}`;
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------

function start(): void {
  if (document.body.dataset.page === "oauth-consent") {
    setUpConsent();
    document.documentElement.dataset.ready = "true";
    return;
  }
  window.addEventListener("hashchange", showView);
  showView();
  setUpDomain();
  setUpArtifact();
  setUpAttestations();
  setUpAccount();
  setUpKeys();
  setUpWebhooks();
  document.documentElement.dataset.ready = "true";
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
