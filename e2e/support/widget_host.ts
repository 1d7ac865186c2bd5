/**
 * The host page of the widget's browser tests (e2e/widget_browser_test.ts), bundled for the browser: a site on
 * another origin that frames the review widget and, when asked (`bridge=1`), runs this package's
 * `createSigningBridge` with a wallet whose signatures come from the test process (`window.__hostSign`, a viem
 * local account there). Every message the page gets from the service's origin is kept in `window.__messages`.
 *
 * Query: `service` (the service's URL), `src` (the widget's URL), `bridge=1`, `policy=foreign` (the bridge's policy
 * read through a fetch that swaps the chain's schemas for one nobody uses: every request then fails its rules),
 * `sibling` (the URL of another site's frame put beside the widget).
 */
import { createSigningBridge } from "../../client/mod.ts";

type HostWindow = Window & {
  __messages: unknown[];
  __hostSign: (json: string) => Promise<string>;
  __bridgeError?: string;
};

const page = window as unknown as HostWindow;
const query = new URLSearchParams(location.search);
const service = query.get("service")!;
page.__messages = [];
window.addEventListener("message", (event) => {
  if (event.origin !== new URL(service).origin) return;
  // Big integers do not survive JSON; the tests read the messages' types and ids.
  page.__messages.push(JSON.parse(JSON.stringify(event.data, (_k, v) => (typeof v === "bigint" ? v.toString() : v))));
});

/** A fetch that gives the bridge a policy whose chains allow only a schema nobody signs for. */
const foreignPolicy = async (url: string) => {
  const policy = await (await fetch(url)).json() as { chains: Record<string, { schemas: string[] }> };
  for (const chain of Object.values(policy.chains)) chain.schemas = [`0x${"f".repeat(64)}`];
  return new Response(JSON.stringify(policy), { headers: { "content-type": "application/json" } });
};

async function main() {
  if (query.get("bridge") === "1") {
    try {
      await createSigningBridge({
        iframeId: "omatrust-widget",
        baseUrl: service,
        fetch: query.get("policy") === "foreign" ? foreignPolicy : undefined,
        signTypedData: (domain, types, message) =>
          page.__hostSign(JSON.stringify({ domain, types, message }, (_k, v) => (typeof v === "bigint" ? v.toString() : v))),
      });
    } catch (error) {
      page.__bridgeError = error instanceof Error ? error.message : String(error);
    }
  }
  // The frame is added once the bridge listens, as a site should: the widget's first `ready` is answered.
  const frame = document.getElementById("omatrust-widget") as HTMLIFrameElement;
  frame.src = query.get("src")!;
  // `sibling`: another site's frame beside the widget (it tries to speak the protocol to it).
  const sibling = query.get("sibling");
  if (sibling !== null) {
    const other = document.createElement("iframe");
    other.id = "sibling";
    other.title = "Another site";
    other.src = sibling;
    document.body.append(other);
  }
  document.documentElement.dataset.ready = "true";
}

void main();
