/**
 * The host page of e2e/widget_reference_host_browser_test.ts, bundled for the browser: a site on another origin that
 * frames the review widget and runs a bridge that follows the reference SDK's rules (reference_style_bridge.ts), with
 * a wallet whose signatures come from the test process (`window.__hostSign`).
 *
 * Query: `service` (the service's URL: the bridge reads its document there), `src` (the widget's URL), `variant`
 * (`trust-policy` or `trust-anchors`). The page keeps every protocol message it gets in `window.__messages`, why the
 * bridge dropped a protocol message in `window.__ignored`, and a bridge that would not start in `window.__bridgeError`.
 * The page's own listener is added before the bridge's, so both hear a message in the same dispatch: whatever a test
 * reads in one evaluation, each message in `__messages` has been through the bridge.
 */
import { type ReferenceVariant, startReferenceStyleBridge } from "./reference_style_bridge.ts";

type HostWindow = Window & {
  __messages: unknown[];
  __ignored: string[];
  __hostSign: (json: string) => Promise<string>;
  __bridgeError?: string;
};

const page = window as unknown as HostWindow;
const query = new URLSearchParams(location.search);
// Big integers do not survive JSON; the tests read the messages' types and ids, and the wallet wants strings.
const asJson = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
page.__messages = [];
page.__ignored = [];
window.addEventListener("message", (event) => {
  const data = event.data as { type?: unknown } | null;
  if (typeof data?.type === "string" && data.type.startsWith("omatrust:")) page.__messages.push(JSON.parse(asJson(data)));
});

async function main() {
  try {
    await startReferenceStyleBridge({
      variant: query.get("variant") as ReferenceVariant,
      serviceUrl: query.get("service")!,
      iframeId: "omatrust-widget",
      signTypedData: (domain, types, message) => page.__hostSign(asJson({ domain, types, message })),
      onIgnored: (reason) => page.__ignored.push(reason),
    });
  } catch (error) {
    page.__bridgeError = error instanceof Error ? error.message : String(error);
  }
  // The frame is added once the bridge listens: the widget's first `ready` is answered.
  (document.getElementById("omatrust-widget") as HTMLIFrameElement).src = query.get("src")!;
  document.documentElement.dataset.ready = "true";
}

void main();
