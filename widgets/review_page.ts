/**
 * The review widget's HTML (decisions §29): static markup with every value from the query escaped, the service's
 * settings in `<meta>` tags (read by the script; nothing inline runs, so the policy needs no `unsafe-inline`), one
 * stylesheet and one module script of the service's own. The page for bad parameters names the parameter.
 */
import type { EmbedParamError, EmbedParams } from "./embed_params.ts";

/** What the page is told about the service: where its reviews are written. */
export type WidgetPageSettings = {
  readonly chainId: number;
  readonly chainName: string;
  readonly easAddress: string;
  /** The user-review schema's UID on `chainId`. */
  readonly reviewSchemaUid: string;
};

/**
 * The widget's policy: its own scripts, styles and connections only, images from https (the app's icon), nothing
 * inline, no forms posted anywhere; framable by any page (`frame-ancestors *`), which is the widget's purpose.
 */
export const WIDGET_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' https: data:",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors *",
].join("; ");

/** The path the widget is served at. */
export const REVIEW_EMBED_PATH = "/widgets/reviews/embed";
/** The widget's script and stylesheet. */
export const REVIEW_SCRIPT_PATH = "/widgets/reviews/widget.js";
export const REVIEW_STYLE_PATH = "/widgets/reviews/widget.css";

const escape = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

function head(title: string, assetVersion: string, meta: string): string {
  const v = escape(assetVersion);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
${meta}<link rel="stylesheet" href="${REVIEW_STYLE_PATH}?v=${v}">
<script type="module" src="${REVIEW_SCRIPT_PATH}?v=${v}"></script>
</head>`;
}

const STARS = [1, 2, 3, 4, 5].map((n) =>
  `<label class="star" data-star="${n}"><input type="radio" name="rating" value="${n}" required><span aria-hidden="true">★</span><span class="sr">${n} of 5</span></label>`
).join("");

/** The widget for good parameters. */
export function renderReviewPage(params: EmbedParams, settings: WidgetPageSettings, assetVersion: string): string {
  const title = params.name ?? params.domain;
  const meta = [
    `<meta name="ats-chain-id" content="${settings.chainId}">`,
    `<meta name="ats-chain-name" content="${escape(settings.chainName)}">`,
    `<meta name="ats-eas" content="${escape(settings.easAddress)}">`,
    `<meta name="ats-review-schema" content="${escape(settings.reviewSchemaUid)}">`,
    "",
  ].join("\n");
  const icon = params.icon === undefined
    ? `<span class="icon fallback" aria-hidden="true">★</span>`
    : `<img class="icon" id="app-icon" src="${escape(params.icon)}" alt="" referrerpolicy="no-referrer">`;
  return `${head(`Review ${title}`, assetVersion, meta)}
<body>
<main class="card" id="widget" data-mode="detecting" aria-labelledby="app-name">
<header class="top">
  ${icon}
  <div class="who">
    <p class="name" id="app-name">${escape(title)}</p>
    <p class="domain">${escape(params.domain)}</p>
  </div>
  <span class="badge" id="verified" hidden>Verified user</span>
</header>

<form id="review-form" class="view" novalidate>
  <p class="lead">Write a review for <strong>${escape(params.domain)}</strong></p>
  <fieldset class="rating">
    <legend>Rating <span class="req" aria-hidden="true">*</span><span class="sr">(required)</span></legend>
    <div class="stars" id="stars">${STARS}</div>
    <p class="hint" id="rating-text">Choose 1 to 5 stars</p>
  </fieldset>
  <label class="field" for="review-body">Review <span class="opt">(optional)</span></label>
  <textarea id="review-body" maxlength="500" rows="4" placeholder="What worked, what broke, what would bring you back?"></textarea>
  <p class="count"><span id="body-count">0</span>/500</p>
  <div class="wallet">
    <div>
      <p class="label">Signing wallet</p>
      <p class="mono" id="wallet-address">${params.wallet === undefined ? "No wallet connected" : escape(params.wallet)}</p>
      <p class="hint" id="mode-text">Looking for the host page's wallet…</p>
      <p class="hint" id="interaction-text" hidden></p>
    </div>
    <button type="button" class="secondary" id="connect" hidden>Connect wallet</button>
  </div>
  <p class="error" id="form-error" role="alert" hidden></p>
  <button type="submit" class="primary" id="review-next">Review and sign</button>
  <button type="button" class="ghost" data-close>Cancel</button>
</form>

<section id="confirm-view" class="view" hidden aria-labelledby="confirm-title">
  <h2 id="confirm-title">Confirm your review before signing</h2>
  <dl class="facts">
    <dt>Chain</dt><dd id="confirm-chain"></dd>
    <dt>Contract</dt><dd class="mono" id="confirm-contract"></dd>
    <dt>Action</dt><dd>Write a user review (an attestation; the service pays the gas)</dd>
    <dt>Subject</dt><dd class="mono" id="confirm-subject"></dd>
    <dt>Rating</dt><dd id="confirm-rating"></dd>
    <dt>Review</dt><dd id="confirm-body"></dd>
    <dt>Proof</dt><dd id="confirm-proof"></dd>
  </dl>
  <button type="button" class="primary" id="confirm-sign">Confirm and sign</button>
  <button type="button" class="ghost" id="confirm-back">Back</button>
</section>

<section id="progress-view" class="view" hidden>
  <p class="spinner" aria-hidden="true"></p>
  <p class="status" id="progress-text" role="status" aria-live="polite"></p>
</section>

<section id="success-view" class="view" hidden aria-labelledby="success-title">
  <h2 id="success-title" class="ok">Review submitted</h2>
  <dl class="facts">
    <dt>Rating</dt><dd id="success-rating"></dd>
    <dt>Review</dt><dd id="success-body"></dd>
    <dt>Subject</dt><dd class="mono">${escape(params.subject)}</dd>
    <dt>Wallet</dt><dd class="mono" id="success-wallet"></dd>
    <dt>Attestation UID</dt><dd class="mono" id="success-uid"></dd>
    <dt>Transaction</dt><dd class="mono" id="success-tx"></dd>
  </dl>
  <button type="button" class="primary" data-close>Done</button>
</section>

<section id="unsure-view" class="view" hidden aria-labelledby="unsure-title">
  <h2 id="unsure-title">The review may have been written</h2>
  <p class="status" id="unsure-text" role="status"></p>
  <button type="button" class="primary" id="check-again">Check again</button>
  <button type="button" class="ghost" data-close>Close</button>
</section>

<section id="error-view" class="view" hidden aria-labelledby="error-title">
  <h2 id="error-title" class="bad">The review was not written</h2>
  <p class="error" id="error-text" role="alert"></p>
  <button type="button" class="primary" id="retry">Try again</button>
  <button type="button" class="ghost" data-close>Cancel</button>
</section>
<noscript><p class="error">The review widget needs JavaScript.</p></noscript>
<footer class="foot">Reviews are attestations on ${escape(settings.chainName)}</footer>
</main>
</body>
</html>
`;
}

/** The page for a parameter the widget cannot use: the parameter named, the value given shown as text. */
export function renderParamErrorPage(error: EmbedParamError, assetVersion: string): string {
  const value = error.value === undefined ? "" : `<p class="label">Value given</p><p class="mono given">${escape(error.value.slice(0, 300))}</p>`;
  return `${head("Review widget: bad parameter", assetVersion, "")}
<body>
<main class="card" id="param-error" data-param="${escape(error.param)}">
<h1 class="bad">This review widget is set up wrongly</h1>
<p>The parameter <code id="bad-param">${escape(error.param)}</code> cannot be used: ${escape(error.message)}.</p>
${value}
<p class="hint">The site that embeds this widget should fix its iframe address (see the widget builder at /widgets/reviews/create).</p>
<button type="button" class="ghost" data-close>Close</button>
</main>
</body>
</html>
`;
}
