/**
 * The console's HTML: static markup, the service's settings in `<meta>` tags (read by the script; nothing
 * inline runs, so the Content-Security-Policy needs no `unsafe-inline`), one stylesheet and one module script.
 */

import { SCOPES } from "../domain/oauth/mod.ts";
import type { WebhookEventType } from "../ports/webhooks.ts";

/** What the page is told about the service it is served by. */
export type ConsolePageSettings = {
  readonly chainId: number;
  readonly chainName: string;
  /** `SERVICE_DNS_LABEL`: the `_<label>.<domain>` TXT name. */
  readonly serviceDnsLabel: string;
};

/** The policy every console answer carries: same-origin scripts, styles and requests only; nothing inline, no frames. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The scopes an API client may be given (decisions §19), as the form offers them. */
const SCOPE_CHOICES = Object.entries(SCOPES);

/** The events an endpoint may ask for (decisions §22), as the form offers them; the attestation events ticked. */
const WEBHOOK_EVENT_CHOICES: Readonly<Record<WebhookEventType, string>> = {
  "attestation.created": "an attestation about a watched subject was written",
  "attestation.revoked": "an attestation about a watched subject was revoked",
  "key.status_changed": "a key binding or controller witness of your subjects was written or revoked",
  "submission.settled": "a relay submission of yours was mined, failed or replaced",
  "webhook.test": "the test event (the button sends it whether ticked or not)",
};
const WEBHOOK_EVENTS_TICKED = new Set<string>(["attestation.created", "attestation.revoked"]);

const escape = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

/** Renders the page; `assetVersion` is added to the asset URLs so a new build is never served from a stale cache. */
export function renderConsolePage(settings: ConsolePageSettings, assetVersion: string): string {
  const v = escape(assetVersion);
  const label = escape(settings.serviceDnsLabel);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ATS console</title>
<meta name="ats-chain-id" content="${settings.chainId}">
<meta name="ats-chain-name" content="${escape(settings.chainName)}">
<meta name="ats-dns-label" content="${label}">
<link rel="stylesheet" href="/console/app.css?v=${v}">
<script type="module" src="/console/app.js?v=${v}"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
  <h1>Attestation Trust Services</h1>
  <p class="chain"><label for="chain-picker">Chain</label>
    <select id="chain-picker" name="chain"><option value="eip155:${settings.chainId}">${escape(settings.chainName)} (id ${settings.chainId})</option></select></p>
  <nav aria-label="Console sections">
    <a href="#domain" data-tab="domain">Check a domain</a>
    <a href="#artifact" data-tab="artifact">Check an artifact</a>
    <a href="#attestations" data-tab="attestations">Attestations</a>
    <a href="#account" data-tab="account">Account</a>
    <a href="#keys" data-tab="keys">Keys</a>
    <a href="#webhooks" data-tab="webhooks">Webhooks</a>
  </nav>
</header>
<main id="main" tabindex="-1">
<noscript><p class="error">The console needs JavaScript.</p></noscript>

${domainSection(label)}

${artifactSection()}

${attestationsSection()}

${accountSection()}

${keysSection()}

${webhooksSection()}
</main>
</body>
</html>
`;
}

/** The "Check a domain" section: the names looked up, a wallet to publish. */
function domainSection(label: string): string {
  return `<section id="domain" data-view="domain" aria-labelledby="domain-title">
  <h2 id="domain-title">Check a domain</h2>
  <p>Looks up what a domain publishes about its controllers: the DNS TXT records at <code>_controllers.&lt;domain&gt;</code>
  and <code>_${label}.&lt;domain&gt;</code>, and <code>https://&lt;domain&gt;/.well-known/did.json</code>.</p>
  <form id="domain-form" class="form">
    <label for="domain-input">Domain or did:web</label>
    <input id="domain-input" name="domain" required autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="shop.example">
    <label for="domain-wallet">Wallet address to publish (optional)</label>
    <input id="domain-wallet" name="wallet" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="0x… or did:pkh:…" aria-describedby="domain-wallet-help">
    <p id="domain-wallet-help" class="help">Give a wallet to see the exact TXT record that names it as a controller.</p>
    <button type="submit">Check domain</button>
  </form>
  <p id="domain-status" class="status" role="status" aria-live="polite"></p>
  <div id="domain-result" class="result"></div>
</section>`;
}

/** The "Check an artifact" section: a did:artifact typed or a file hashed in the browser. */
function artifactSection(): string {
  return `<section id="artifact" data-view="artifact" aria-labelledby="artifact-title" hidden>
  <h2 id="artifact-title">Check an artifact</h2>
  <p>Shows the verified evidence about an artifact and whether a plugin loader would warn about it.</p>
  <form id="artifact-form" class="form">
    <label for="artifact-input">did:artifact</label>
    <input id="artifact-input" name="artifactDid" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="did:artifact:bafkrei…">
    <label for="artifact-file">Or a file, hashed in this browser (never uploaded)</label>
    <input id="artifact-file" name="file" type="file">
    <div id="artifact-drop" class="drop" aria-hidden="true">Or drop a file here</div>
    <label for="artifact-publisher">Declared publisher DID (optional)</label>
    <input id="artifact-publisher" name="publisher" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="did:web:publisher.example" aria-describedby="artifact-publisher-help">
    <p id="artifact-publisher-help" class="help">With a publisher, only responsibility claims naming it count for the loader.</p>
    <button type="submit">Check artifact</button>
  </form>
  <p id="artifact-status" class="status" role="status" aria-live="polite"></p>
  <div id="artifact-result" class="result"></div>
</section>`;
}

/** The "Attestations" section: a subject, an attester, a schema. */
function attestationsSection(): string {
  return `<section id="attestations" data-view="attestations" aria-labelledby="attestations-title" hidden>
  <h2 id="attestations-title">Attestations</h2>
  <form id="attestations-form" class="form">
    <label for="attestations-subject">Subject DID or domain</label>
    <input id="attestations-subject" name="subject" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="did:web:shop.example" aria-describedby="attestations-help">
    <label for="attestations-attester">Attester</label>
    <input id="attestations-attester" name="attester" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="0x…" pattern="\\s*0x[0-9a-fA-F]{40}\\s*" title="0x and 40 hex digits" aria-describedby="attestations-help">
    <label for="attestations-schema">Schema</label>
    <select id="attestations-schema" name="schema"><option value="">Any schema</option><option value="user-review">user-review</option></select>
    <p id="attestations-help" class="help">Give a subject, an attester or a schema, or several: everything an attester wrote, every review of a service.</p>
    <button type="submit">List attestations</button>
  </form>
  <p id="attestations-status" class="status" role="status" aria-live="polite"></p>
  <div id="attestations-result" class="result"></div>
</section>`;
}

/** The "Account" section: wallet sign-in, subjects, API clients, authorised applications, the witness, a review. */
function accountSection(): string {
  return `<section id="account" data-view="account" aria-labelledby="account-title" hidden>
  <h2 id="account-title">Account</h2>
  <div id="wallets">
    <h3>Sign in with a wallet</h3>
    <p class="help">Wallets installed in this browser announce themselves here (EIP-6963). Signing in signs a message; it costs nothing.</p>
    <div id="wallet-list" class="buttons"></div>
  </div>
  <p id="account-status" class="status" role="status" aria-live="polite"></p>
  <div id="account-panel" hidden>
    <div id="account-summary" class="card"></div>
    <button type="button" id="sign-out">Sign out</button>

    <h3>Subjects</h3>
    <div id="subject-list"></div>
    <form id="subject-form" class="form">
      <label for="subject-did">Subject (domain, did:web or did:pkh)</label>
      <input id="subject-did" name="did" required autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="shop.example">
      <label for="subject-name">Display name (optional)</label>
      <input id="subject-name" name="displayName" maxlength="100" autocomplete="off">
      <div class="buttons">
        <button type="button" id="subject-verify">Check ownership</button>
        <button type="submit">Add subject</button>
      </div>
    </form>
    <p id="subject-status" class="status" role="status" aria-live="polite"></p>

    <h3>API clients</h3>
    <p class="help">Credentials for your own software (a backend, a CI job): OAuth 2 client credentials that act for this account within the scopes you pick, counted against your plan. The secret is shown once.</p>
    <div id="api-client-list"></div>
    <form id="api-client-form" class="form">
      <label for="api-client-name">Name</label>
      <input id="api-client-name" name="client_name" required maxlength="200" autocomplete="off" placeholder="Release pipeline">
      <fieldset id="api-client-scopes">
        <legend>Scopes</legend>
        ${SCOPE_CHOICES.map(([name, text]) => `<label class="check"><input type="checkbox" name="scope" value="${name}" checked> <code>${name}</code> ${escape(text)}</label>`).join("\n        ")}
      </fieldset>
      <button type="submit">Create API client</button>
    </form>
    <p id="api-client-status" class="status" role="status" aria-live="polite"></p>
    <div id="api-client-secret" class="card" tabindex="-1" aria-label="API client secret" hidden></div>

    <h3>Authorised applications</h3>
    <p class="help">Software you allowed to act for this account on the service's consent page. Revoking ends its tokens at once; it has to ask you again.</p>
    <div id="authorization-list"></div>
    <p id="authorization-status" class="status" role="status" aria-live="polite"></p>

    <h3>Controller witness</h3>
    <p class="help">When the domain publishes your wallet (DNS TXT or did.json), the service writes a controller-witness attestation. Uses one sponsored write.</p>
    <form id="witness-form" class="form">
      <label for="witness-subject">Domain or did:web</label>
      <input id="witness-subject" name="subjectDid" required autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="shop.example">
      <button type="submit">Request witness</button>
    </form>
    <p id="witness-status" class="status" role="status" aria-live="polite"></p>

    <h3>Write a review</h3>
    <p class="help">A user-review attestation signed by your wallet and sent through the service's relay (one sponsored write; no gas from you).</p>
    <form id="review-form" class="form">
      <label for="review-subject">Service (domain or did:web)</label>
      <input id="review-subject" name="subject" required autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="shop.example">
      <label for="review-rating">Rating</label>
      <select id="review-rating" name="rating">
        <option value="5">5 – excellent</option><option value="4">4 – good</option><option value="3">3 – fair</option>
        <option value="2">2 – poor</option><option value="1">1 – bad</option>
      </select>
      <label for="review-body">Review (up to 500 characters)</label>
      <textarea id="review-body" name="reviewBody" maxlength="500" rows="4"></textarea>
      <label for="review-tx">Transaction with the service, as proof (optional)</label>
      <input id="review-tx" name="txHash" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="0x… (its hash, on this service's chain)" aria-describedby="review-tx-help">
      <p id="review-tx-help" class="help">A payment or call your wallet sent to an address the service names in its DNS TXT record or did.json. Readers check it on chain.</p>
      <label for="review-tx-type">What the transaction proves</label>
      <select id="review-tx-type" name="txProofType">
        <option value="tx-interaction">tx-interaction: you used the service</option>
        <option value="tx-encoded-value">tx-encoded-value: an amount the service asked you to send</option>
      </select>
      <button type="submit">Sign and send review</button>
    </form>
    <p id="review-status" class="status" role="status" aria-live="polite"></p>
  </div>
</section>`;
}

/** The "Keys" section: anyone's key status, the account's signing keys. */
function keysSection(): string {
  return `<section id="keys" data-view="keys" aria-labelledby="keys-title" hidden>
  <h2 id="keys-title">Keys</h2>
  <p>Keys a service signs with outside the chain (x402 offers and receipts, MCP responses, releases), and how strongly
  each is tied to the service: <strong>basic</strong> (its DNS TXT or did.json names the key), <strong>intermediate</strong>
  (a controller witness), <strong>advanced</strong> (a witness and a key binding).</p>
  <h3>Check a key</h3>
  <p class="help">Anyone's key, no sign-in needed. With a time, the chain's records are judged as they stood then (a receipt's issuedAt); the DNS and did.json evidence is always today's.</p>
  <form id="key-check-form" class="form">
    <label for="key-check-subject">Service (domain or DID)</label>
    <input id="key-check-subject" name="subjectDid" required autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="shop.example">
    <label for="key-check-key">Key DID</label>
    <input id="key-check-key" name="keyDid" required autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="did:pkh:… or did:jwk:…">
    <label for="key-check-at">At, UTC (optional)</label>
    <input id="key-check-at" name="at" type="datetime-local" step="1">
    <button type="submit">Check key</button>
  </form>
  <p id="key-check-status" class="status" role="status" aria-live="polite"></p>
  <div id="key-check-result" class="result"></div>

  <h3>Your signing keys</h3>
  <p id="keys-signed-out" class="help">Sign in (Account) to register your service's signing keys and see their trust for each of your subjects.</p>
  <div id="keys-panel" hidden>
    <div id="key-list"></div>
    <form id="key-form" class="form">
      <label for="key-did">Key DID</label>
      <input id="key-did" name="keyDid" required autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="did:pkh:eip155:…, did:jwk:…, did:key:…">
      <label for="key-name">Display name</label>
      <input id="key-name" name="displayName" required maxlength="200" autocomplete="off" placeholder="x402 receipt signer">
      <label for="key-type">Type</label>
      <select id="key-type" name="keyType"><option value="service-signing">service-signing</option><option value="attestation">attestation</option></select>
      <label for="key-tags">Tags (comma separated, optional)</label>
      <input id="key-tags" name="tags" autocomplete="off" placeholder="x402, mcp">
      <label for="key-notes">Notes (optional)</label>
      <textarea id="key-notes" name="notes" maxlength="1000" rows="2"></textarea>
      <button type="submit">Register key</button>
    </form>
    <p id="key-status" class="status" role="status" aria-live="polite"></p>
  </div>
</section>`;
}

/** The "Webhooks" section: the account's endpoints, their deliveries, a new endpoint. */
function webhooksSection(): string {
  return `<section id="webhooks" data-view="webhooks" aria-labelledby="webhooks-title" hidden>
  <h2 id="webhooks-title">Webhooks</h2>
  <p>The service tells your software when something happens instead of being polled: it sends each event as a signed
  POST (Standard Webhooks: <code>webhook-id</code>,
  <code>webhook-timestamp</code>, <code>webhook-signature</code>) to your endpoints, retrying until your endpoint
  answers 2xx.</p>
  <p id="webhooks-signed-out" class="help">Sign in (Account) to register endpoints, see their deliveries and send a test event.</p>
  <div id="webhooks-panel" hidden>
    <h3>Your endpoints</h3>
    <div id="webhook-list"></div>
    <p id="webhook-status" class="status" role="status" aria-live="polite"></p>
    <div id="webhook-secret" class="card secret" tabindex="-1" aria-label="Webhook secret" hidden></div>

    <h3 id="webhook-deliveries-title">Recent deliveries</h3>
    <div id="webhook-deliveries"><p class="help">Choose <em>Deliveries</em> on an endpoint, or send it a test event.</p></div>

    <h3>Add an endpoint</h3>
    <form id="webhook-form" class="form">
      <label for="webhook-url">URL</label>
      <input id="webhook-url" name="url" type="url" required maxlength="2048" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="https://hooks.example.com/ats" aria-describedby="webhook-url-help">
      <p id="webhook-url-help" class="help">https:// only; the host must resolve to a public address (checked now and at every delivery).</p>
      <fieldset id="webhook-events">
        <legend>Events</legend>
        ${Object.entries(WEBHOOK_EVENT_CHOICES).map(([name, text]) => `<label class="check"><input type="checkbox" name="event" value="${name}"${WEBHOOK_EVENTS_TICKED.has(name) ? " checked" : ""}> <span><code>${name}</code> ${escape(text)}</span></label>`).join("\n        ")}
      </fieldset>
      <label for="webhook-subjects">Other subjects to watch (optional, one a line)</label>
      <textarea id="webhook-subjects" name="subjects" rows="3" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="did:web:shop.example&#10;did:artifact:bafkrei…" aria-describedby="webhook-subjects-help"></textarea>
      <p id="webhook-subjects-help" class="help">Any subject may be watched (chain data is public): a domain, did:web, did:pkh or did:artifact.</p>
      <label class="check"><input type="checkbox" id="webhook-own" name="ownSubjects" checked> <span>Also the subjects this account has proven</span></label>
      <button type="submit">Add endpoint</button>
    </form>
    <p id="webhook-form-status" class="status" role="status" aria-live="polite"></p>
  </div>
</section>`;
}
