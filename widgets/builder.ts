/**
 * The widget builder's script (decisions §29), part of the widget bundle: it checks the form with the widget's own
 * parameter rules (a bad field is named), and writes the snippets as text and the preview's address.
 */
import { parseEmbedParams } from "./embed_params.ts";
import { REVIEW_EMBED_PATH } from "./review_page.ts";

const FIELDS = ["url", "contract", "chainId", "name", "icon"] as const;

/** The snippets for a widget address: the iframe, and for integrated mode the install line and the bridge code. */
export function builderSnippets(origin: string, query: URLSearchParams, mode: "basic" | "integrated", title: string) {
  const src = `${origin}${REVIEW_EMBED_PATH}?${query}`;
  const attrs = `id="omatrust-widget" title="${title.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`)}" width="440" height="760"\n  style="border:0;width:100%;max-width:440px" loading="lazy"`;
  if (mode === "basic") return { install: undefined, iframe: `<iframe ${attrs}\n  src="${src}"></iframe>`, bridge: undefined };
  return {
    install: "npm install @ats/client viem",
    iframe: `<iframe ${attrs}></iframe>`,
    bridge: `import { createSigningBridge } from "@ats/client";

// Start the bridge first, then load the widget with the user's wallet in its address.
await createSigningBridge({
  iframeId: "omatrust-widget",
  baseUrl: "${origin}",
  signTypedData: (domain, types, message) =>
    walletClient.signTypedData({ account, domain, types, primaryType: "Attest", message }),
});
document.getElementById("omatrust-widget").src =
  "${src}&wallet=" + account.address;`,
  };
}

/** Wires the builder page. */
export function startBuilder(): void {
  const form = document.getElementById("builder-form") as HTMLFormElement;
  const byId = (id: string) => document.getElementById(id) as HTMLElement;
  const error = byId("builder-error");
  let all = "";
  const hideOutput = () => {
    byId("builder-output").hidden = true;
    byId("preview-block").hidden = true;
    (byId("builder-preview") as HTMLIFrameElement).removeAttribute("src");
    all = "";
  };
  form.addEventListener("reset", () => {
    error.hidden = true;
    hideOutput();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const query = new URLSearchParams();
    for (const field of FIELDS) {
      const value = String(data.get(field) ?? "").trim();
      if (value !== "") query.set(field, value);
    }
    const parsed = parseEmbedParams(query);
    if (!parsed.ok) {
      error.hidden = false;
      error.textContent = `${parsed.error.param}: ${parsed.error.message}`;
      // The last good snippet and preview went on showing (and copying) beside the error: they go with it.
      hideOutput();
      return;
    }
    error.hidden = true;
    // The domain as the widget reads it (www. dropped), so the snippet says what is reviewed.
    query.set("url", parsed.value.domain);
    const mode = data.get("mode") === "integrated" ? "integrated" : "basic";
    const snippets = builderSnippets(location.origin, query, mode, `Review ${parsed.value.name ?? parsed.value.domain}`);
    byId("install-block").hidden = snippets.install === undefined;
    byId("bridge-block").hidden = snippets.bridge === undefined;
    byId("snippet-install").textContent = snippets.install ?? "";
    byId("snippet-iframe").textContent = snippets.iframe;
    byId("snippet-bridge").textContent = snippets.bridge ?? "";
    all = [snippets.install, snippets.iframe, snippets.bridge].filter((s) => s !== undefined).join("\n\n");
    byId("builder-output").hidden = false;
    byId("preview-block").hidden = false;
    (byId("builder-preview") as HTMLIFrameElement).src = `${REVIEW_EMBED_PATH}?${query}`;
  });
  byId("copy-snippet").addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(all);
      byId("copy-status").textContent = "Copied.";
    } catch {
      byId("copy-status").textContent = "Copy by hand: select the text above.";
    }
  });
}
