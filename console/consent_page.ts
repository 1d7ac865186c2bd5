/**
 * The OAuth consent page (decisions §19), served by the service under the console's strict policy: static markup,
 * the console's stylesheet and script (which offers wallet sign-in here when no session is present), and a plain
 * HTML form posted back to `/oauth/authorize` with the request in hidden fields, a CSRF token among them, and the
 * buttons `decision=approve` and `decision=deny`. Nothing inline runs.
 */

/** A scope line of the page. */
export type ConsentScope = { readonly name: string; readonly description: string };

/** What the page shows. */
export type ConsentPage =
  | { readonly kind: "error"; readonly title: string; readonly description: string }
  | {
    readonly kind: "sign-in";
    readonly clientName: string;
    readonly clientId: string;
    readonly redirectOrigin: string;
    readonly scopes: readonly ConsentScope[];
    readonly chainId: number;
  }
  | {
    readonly kind: "consent";
    readonly clientName: string;
    readonly clientId: string;
    readonly redirectOrigin: string;
    readonly scopes: readonly ConsentScope[];
    readonly account: string;
    /** The hidden fields, the CSRF token among them. */
    readonly fields: Readonly<Record<string, string>>;
  };

const escape = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

const scopeList = (scopes: readonly ConsentScope[]) =>
  `<ul id="consent-scopes" class="scopes">${scopes.map((s) => `<li><code>${escape(s.name)}</code> ${escape(s.description)}</li>`).join("")}</ul>`;

/** Renders the page; `assetVersion` busts the cache of the console's assets. */
export function renderConsentPage(page: ConsentPage, assetVersion: string): string {
  const v = escape(assetVersion);
  let body: string;
  if (page.kind === "error") {
    body = `<h2 id="consent-title">${escape(page.title)}</h2>
<p id="consent-error" class="status error" role="alert">${escape(page.description)}</p>
<p class="help">Go back to the application and start again; if this keeps happening, tell its developer.</p>`;
  } else {
    const who = `<p class="lead"><strong id="consent-client">${escape(page.clientName)}</strong> (<code>${escape(page.clientId)}</code>, returning to
<code id="consent-redirect">${escape(page.redirectOrigin)}</code>) asks to act for your account:</p>
<p class="help" id="consent-unverified">The application registered itself here: its name is its own claim, not checked by this service. Trust the address it returns to, not the name.</p>
${scopeList(page.scopes)}
<p class="help">It will act as you, within your plan and its quota. You can revoke it later in the console: Account, then Authorised applications, Revoke.</p>`;
    body = page.kind === "sign-in"
      ? `<h2 id="consent-title">Authorize an application</h2>
${who}
<h3>Sign in with your wallet to continue</h3>
<p class="help">Wallets installed in this browser announce themselves here (EIP-6963). Signing in signs a message; it costs nothing.</p>
<div id="wallet-list" class="buttons"></div>
<p id="account-status" class="status" role="status" aria-live="polite"></p>`
      : `<h2 id="consent-title">Authorize an application</h2>
${who}
<p>Signed in as <code id="consent-account">${escape(page.account)}</code>.</p>
<form id="consent-form" class="form" method="post" action="/oauth/authorize">
${Object.entries(page.fields).map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`).join("\n")}
<div class="buttons">
<button type="submit" name="decision" value="approve" id="consent-approve" disabled>Allow</button>
<button type="submit" name="decision" value="deny" id="consent-deny" class="secondary">Deny</button>
</div>
</form>`;
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorize an application – ATS</title>
${page.kind === "sign-in" ? `<meta name="ats-chain-id" content="${page.chainId}">\n` : ""}<link rel="stylesheet" href="/console/app.css?v=${v}">
<script type="module" src="/console/app.js?v=${v}"></script>
</head>
<body data-page="oauth-consent">
<header>
  <h1>Attestation Trust Services</h1>
</header>
<main id="main" class="consent">
<section aria-labelledby="consent-title">
${body}
</section>
</main>
</body>
</html>
`;
}
