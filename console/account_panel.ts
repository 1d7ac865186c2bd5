/** The "Account" panel: wallet sign-in, usage, subjects, API clients, authorised applications, the witness and a review. */
import { addSubject, type AnnouncedWallet, AtsClientError, createApiClient, deleteApiClient, fetchAccount, listApiClients, listAuthorizations, listSubjects, removeSubject, revokeAuthorization, requestWalletAddress, requestWitness, signInWithEthereum, signOutSession, verifySubjectOwnership, walletSigner, watchWallets, writeReview } from "../client/mod.ts";
import { walletDid, needSigner, currentSigner, setSigner, setSessionWallet } from "./_session.ts";
import { forgetKeys, refreshKeys } from "./keys_panel.ts";
import { forgetWebhooks, forgetWebhookSecret, refreshWebhooks } from "./webhooks_panel.ts";
import { h, byId, CHAIN_ID, api, setStatus, describeError, busy, copyButton, writtenThenRefreshed, siteOf, whenSessionEnds } from "./_dom.ts";

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
    setSigner(next);
    const domainWallet = byId<HTMLInputElement>("domain-wallet");
    if (domainWallet.value === "") domainWallet.value = address;
    await refreshAccount();
    return `Signed in as ${address}`;
  });
}

/** What the signed-in account's plan may write (from its last read); a review it may not is refused before signing. */
let eligibleSchemas: readonly string[] = ["*"];

/** The id of the account the page shows, if any: another account's answer first forgets everything of this one. */
let shownAccount: string | undefined;

/** Empties and hides the cards that show a secret once (an API client's, a webhook's). */
function forgetSecrets(): void {
  const secret = byId("api-client-secret");
  secret.hidden = true;
  secret.replaceChildren();
  forgetWebhookSecret();
}

/**
 * Forgets everything of the account the page showed, and hides its panels: the secrets shown once (decisions §19,
 * §22: never to another account), the lists, status lines and forms of the Account, Keys and Webhooks panels. On
 * signing out, when the service says the session has ended, and when another account signs in on the same page:
 * before, the next wallet to sign in was shown the last one's API client and webhook secrets, with a working Copy.
 */
function forgetAccount(): void {
  shownAccount = undefined;
  eligibleSchemas = ["*"];
  forgetSecrets();
  for (const id of ["account-summary", "subject-list", "api-client-list", "authorization-list"]) byId(id).replaceChildren();
  for (const id of ["subject-status", "api-client-status", "authorization-status", "witness-status", "review-status"]) setStatus(id, "", "");
  for (const id of ["subject-form", "api-client-form", "witness-form", "review-form"]) byId<HTMLFormElement>(id).reset();
  byId("account-panel").hidden = true;
  forgetKeys();
  forgetWebhooks();
}

export async function refreshAccount(): Promise<void> {
  const [overview, subjects] = await Promise.all([fetchAccount(api), listSubjects(api)]);
  if (shownAccount !== undefined && shownAccount !== overview.account.id) forgetAccount();
  shownAccount = overview.account.id;
  eligibleSchemas = overview.subscription.eligibleSchemas;
  setSessionWallet(overview.wallets[0]?.address);
  const s = overview.subscription;
  byId("account-summary").replaceChildren(h("dl", { id: "account-usage" },
    h("dt", {}, "Wallet"), h("dd", {}, h("code", {}, currentSigner()?.address ?? overview.wallets[0]?.address ?? "—")),
    h("dt", {}, "Plan"), h("dd", { id: "account-plan" }, `${s.plan} (${s.status})`),
    h("dt", {}, "Sponsored writes"), h("dd", { id: "account-writes" }, `${s.sponsoredWritesUsedCurrentYear} of ${s.annualSponsoredWriteLimit} used this year`),
    h("dt", {}, "Premium reads"), h("dd", {}, `${s.premiumReadsUsedCurrentYear} of ${s.annualPremiumReadLimit} used this year`),
    h("dt", {}, "Period ends"), h("dd", {}, s.entitlementPeriodEnd.replace("T", " ").replace(/(\.\d+)?Z$/, " UTC")),
    h("dt", {}, "May write"), h("dd", { id: "account-schemas" }, s.eligibleSchemas.includes("*") ? "every schema" : s.eligibleSchemas.join(", ") || "no schema"),
    h("dt", {}, "Default subject"), h("dd", {}, overview.primarySubject?.canonicalDid ?? "—"),
  ));
  byId("subject-list").replaceChildren(h("ul", { id: "subjects" }, subjects.map((subject) => {
    // The wallet's own subject, alone, comes back at the next read (decisions §12): "Removed" said otherwise.
    if (subjects.length === 1 && subject.ownership.method === "wallet") {
      return h("li", { "data-did": subject.canonicalDid },
        h("code", {}, subject.canonicalDid),
        ` — your wallet's own subject, default; it stays while it is your only one`);
    }
    const remove = h("button", { type: "button", class: "secondary", "aria-label": `Remove ${subject.canonicalDid}` }, "Remove");
    remove.addEventListener("click", () => {
      // One removal at a time: a double click sent two, and the second answered SUBJECT_NOT_FOUND.
      remove.disabled = true;
      void busy(null, "subject-status", `Removing ${subject.canonicalDid}…`, async () => {
        await removeSubject(subject.id, api);
        await refreshAccount();
        return `Removed ${subject.canonicalDid}`;
      }).finally(() => (remove.disabled = false));
    });
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

export function setUpAccount(): void {
  renderWallets([]);
  watchWallets(window, renderWallets);
  // A session from an earlier visit: show it; signing again needs the wallet.
  void refreshAccount().then(
    () => setStatus("account-status", "", "Signed in from an earlier visit; sign in again with your wallet to sign reviews and key bindings."),
    () => undefined,
  );
  const signedOut = () => {
    setSigner(undefined);
    setSessionWallet(undefined);
    forgetAccount();
  };
  // A 401 from the service: the session is gone (signed out elsewhere, expired, its cookie cleared).
  whenSessionEnds((error) => {
    signedOut();
    setStatus("account-status", "error", describeError(error));
  });
  byId("sign-out").addEventListener("click", () => {
    // The secrets go at once, whatever the service answers: whoever clicked is leaving the page.
    forgetSecrets();
    void busy(null, "account-status", "Signing out…", async () => {
      await signOutSession(api);
      signedOut();
      return "Signed out";
    });
  });

  const subjectForm = byId<HTMLFormElement>("subject-form");
  const subjectDid = () => siteOf(byId<HTMLInputElement>("subject-did").value);
  byId("subject-verify").addEventListener("click", () =>
    void busy(subjectForm, "subject-status", "Checking ownership…", async () => {
      const proof = await verifySubjectOwnership({ subjectDid: subjectDid(), connectedWalletDid: walletDid() || needSigner().address }, api);
      if (proof.ok) return `Verified: your wallet owns ${proof.subjectDid} (method ${proof.method})`;
      // The code "Add subject" answers for the same failure (the documented one; a code of the console's own before).
      throw new AtsClientError("SUBJECT_OWNERSHIP_VERIFICATION_FAILED", proof.error ?? "Not proven", { body: { details: proof.details } });
    }));
  subjectForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(subjectForm, "subject-status", "Proving ownership and adding the subject…", async () => {
      const displayName = byId<HTMLInputElement>("subject-name").value.trim() || undefined;
      const subject = await addSubject({ did: subjectDid(), displayName }, api);
      return await writtenThenRefreshed(`Added ${subject.canonicalDid} (proven by ${subject.ownership.method})`, refreshAccount);
    });
  });

  const clientForm = byId<HTMLFormElement>("api-client-form");
  clientForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(clientForm, "api-client-status", "Creating the API client…", async () => {
      const scope = Array.from(clientForm.querySelectorAll<HTMLInputElement>("input[name=scope]:checked"), (box) => box.value).join(" ");
      // Nothing ticked is no scope, never every scope (the service refuses it too).
      if (scope === "") return { warn: "Tick at least one scope" };
      const created = await createApiClient({ client_name: byId<HTMLInputElement>("api-client-name").value.trim(), scope }, api);
      // A second Enter on a form still filled in made a second client.
      clientForm.reset();
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
      // To the secret, as the webhook secret's card does: a keyboard user tabbed past every scope box to reach Copy.
      secret.scrollIntoView({ block: "nearest" });
      secret.focus({ preventScroll: true });
      await refreshApiClients();
      return `Created ${created.client_name ?? created.client_id} (${created.scope})`;
    });
  });

  const witnessForm = byId<HTMLFormElement>("witness-form");
  witnessForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(witnessForm, "witness-status", "Checking the domain's records and writing the witness…", async () => {
      // Nothing to sign: the session's wallet will do, after a reload too.
      if (walletDid() === "") needSigner();
      // A pasted address of the site (https://shop.example/) is its domain, as the subject and domain forms read it.
      const result = await requestWitness({ subjectDid: siteOf(byId<HTMLInputElement>("witness-subject").value), controllerDid: walletDid() }, api);
      return await writtenThenRefreshed(`Witness written (${result.method}): uid ${result.uid}, transaction ${result.txHash}, block ${result.blockNumber}`, refreshAccount);
    });
  });

  const reviewForm = byId<HTMLFormElement>("review-form");
  reviewForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(reviewForm, "review-status", "Preparing the review…", async () => {
      // Refused before the wallet signs (it signed, then the relay answered SCHEMA_NOT_ELIGIBLE).
      // (A plan listing schemas by UID is left to the relay: the console does not know the review schema's UID here.)
      if (!eligibleSchemas.some((entry) => entry === "*" || /^(user-review|0x[0-9a-f]{64})$/i.test(entry.trim()))) {
        throw new AtsClientError("SCHEMA_NOT_ELIGIBLE", `Your plan's sponsored writes may write ${eligibleSchemas.join(", ") || "no schema"}, not user reviews; nothing was signed`);
      }
      const wallet = needSigner();
      const steps = { nonce: "Reading your EAS nonce…", sign: "Sign the review in your wallet…", submit: "Sending through the relay…" };
      const txHash = byId<HTMLInputElement>("review-tx").value.trim();
      const proofType = byId<HTMLSelectElement>("review-tx-type").value as "tx-interaction" | "tx-encoded-value";
      const result = await writeReview({
        subject: siteOf(byId<HTMLInputElement>("review-subject").value),
        ratingValue: Number(byId<HTMLSelectElement>("review-rating").value),
        reviewBody: byId<HTMLTextAreaElement>("review-body").value,
        transaction: txHash === ""
          ? undefined
          : { chainId: CHAIN_ID, txHash, proofType },
        attester: wallet.address,
        sign: (typedData) => wallet.signTypedData(typedData),
        onProgress: (step) => setStatus("review-status", "progress", steps[step]),
      }, api);
      const proof = txHash === "" ? "" : ` (with ${proofType} proof ${txHash.toLowerCase()})`;
      return await writtenThenRefreshed(`Review written${proof}: uid ${result.uid}, transaction ${result.txHash}, block ${result.blockNumber}`, refreshAccount);
    });
  });
}
