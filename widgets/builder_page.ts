/**
 * The widget builder's HTML (decisions §29): a site owner enters the app's domain, contract, chain id, name and icon
 * and gets the iframe snippet for basic mode, or the `npm install` line, the iframe and the `createSigningBridge`
 * code for integrated mode, with a live preview of the widget. Static markup; the widget's own script
 * (widgets/review_widget.ts) fills the snippets in as text.
 */

/** The path the builder is served at. */
export const REVIEW_BUILDER_PATH = "/widgets/reviews/create";

/**
 * The builder's policy: its own script, style and connections, the preview framed from the service itself, and no
 * framing of the builder by other sites.
 */
export const BUILDER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' https: data:",
  "frame-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

const escape = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

/** Renders the builder; `chainName` is the service's chain, where reviews are written. */
export function renderBuilderPage(options: { readonly chainName: string; readonly assetVersion: string; readonly scriptPath: string; readonly stylePath: string }): string {
  const v = escape(options.assetVersion);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Review widget builder</title>
<link rel="stylesheet" href="${options.stylePath}?v=${v}">
<script type="module" src="${options.scriptPath}?v=${v}"></script>
</head>
<body class="builder-page">
<main id="builder" class="builder">
<section class="card builder-form" aria-labelledby="builder-title">
  <h1 id="builder-title">Review widget builder</h1>
  <p class="hint">Reviews of your app, written on your site, recorded on ${escape(options.chainName)}. Fill in your app, then copy the snippet.</p>
  <form id="builder-form" novalidate>
    <label class="field" for="b-url">App domain <span class="req" aria-hidden="true">*</span></label>
    <input id="b-url" name="url" required placeholder="acme-quest.example" autocomplete="off">
    <label class="field" for="b-contract">Contract address <span class="req" aria-hidden="true">*</span></label>
    <input id="b-contract" name="contract" required placeholder="0x…" autocomplete="off" class="mono">
    <label class="field" for="b-chain">Chain id <span class="req" aria-hidden="true">*</span></label>
    <input id="b-chain" name="chainId" required inputmode="numeric" placeholder="8453" autocomplete="off">
    <label class="field" for="b-name">App name <span class="opt">(optional)</span></label>
    <input id="b-name" name="name" autocomplete="off">
    <label class="field" for="b-icon">Icon URL <span class="opt">(optional, https)</span></label>
    <input id="b-icon" name="icon" autocomplete="off" placeholder="https://…">
    <fieldset class="modes">
      <legend>Who signs</legend>
      <label><input type="radio" name="mode" value="basic" checked> Basic: the user's browser wallet, in the widget</label>
      <label><input type="radio" name="mode" value="integrated"> Integrated: your page's connected wallet</label>
    </fieldset>
    <p class="error" id="builder-error" role="alert" hidden></p>
    <button type="submit" class="primary" id="builder-generate">Generate</button>
    <button type="reset" class="ghost" id="builder-clear">Clear</button>
  </form>
</section>
<section class="card builder-out" id="builder-output" hidden aria-labelledby="output-title">
  <h2 id="output-title">Your snippet</h2>
  <div id="install-block" hidden>
    <p class="label">Install</p>
    <pre class="code" id="snippet-install"></pre>
  </div>
  <p class="label">Iframe</p>
  <pre class="code" id="snippet-iframe"></pre>
  <div id="bridge-block" hidden>
    <p class="label">Bridge (start it before the frame loads)</p>
    <pre class="code" id="snippet-bridge"></pre>
  </div>
  <button type="button" class="secondary" id="copy-snippet">Copy all</button>
  <p class="hint" id="copy-status" role="status"></p>
</section>
<section class="builder-preview" id="preview-block" hidden aria-labelledby="preview-title">
  <h2 id="preview-title">Live preview</h2>
  <iframe id="builder-preview" title="Review widget preview"></iframe>
</section>
</main>
</body>
</html>
`;
}
