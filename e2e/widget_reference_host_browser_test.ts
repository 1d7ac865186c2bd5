/**
 * The review widget framed by a host on the reference SDK's bridge (decisions §29: "A host on the reference's older
 * bridge (trust policy) and one on its newer bridge (trust anchors) both work"), in a real headless Chromium against
 * the real service on the devnet. The reference package (`@oma3/omatrust/widgets`) is not published on npm, so the
 * host runs e2e/support/reference_style_bridge.ts: written here from the reference's published rules, not its code.
 * The host is `http://localhost:<port>`, another origin than the service's `http://127.0.0.1:<port>`.
 *
 * - integrated mode on each bridge: the host reads its document (`/v1/trust-policy` or `/v1/trust-anchors`), answers
 *   the widget's `ready`, its wallet signs once, the review is read back from EAS, the widget shows success;
 * - the allowlists are the service's: a request with the document's schema and contract is signed, the same request
 *   with a schema or contract the document does not name (or an expired deadline, a wrong domain, no id) is answered
 *   `signatureError` without a wallet call;
 * - the origin rule is live: a widget origin that only the document's `widgetOrigins` names (WIDGET_ORIGINS, a name
 *   the browser maps to the service's address) is answered; the service's widget served from an origin neither in
 *   `widgetOrigins` nor under the document's base domain (`localhost`) is ignored, its signing request too (no answer,
 *   no wallet call), and the widget falls back to basic mode.
 * Screenshots of the success state at 360 and 1280 px go to e2e/screenshots/.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Frame, Page } from "playwright-core";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ATTEST_TYPES } from "../domain/delegation/mod.ts";
import { freePort, type Stack } from "./harness.ts";
import type { ReferenceVariant } from "./support/reference_style_bridge.ts";
import {
  describeBrowser,
  easNonce,
  HAVE_CHROMIUM,
  messageTypes,
  press,
  readReview,
  screenshots,
  signJson,
  startWidgetRig,
  stopWidgetRig,
  waitForWidget,
  type WatchedPage,
  watchedPage,
  type WidgetRig,
  writeReview,
} from "./support/widget_page.ts";

const APP_CONTRACT = "0x1111111111111111111111111111111111111111";
const VARIANTS: readonly ReferenceVariant[] = ["trust-policy", "trust-anchors"];
const CDN_HOST = "widgets.acme-cdn.test";

let rig: WidgetRig;
let stack: Stack;
/** Another origin serving the service's widgets (WIDGET_ORIGINS): a name the browser maps to the service's address. */
let cdnOrigin: string;
let user: ReturnType<typeof privateKeyToAccount>;

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  // The service's port chosen here: the CDN's origin names it too.
  const port = freePort();
  cdnOrigin = `http://${CDN_HOST}:${port}`;
  rig = await startWidgetRig("reference_widget_host.ts", { port, env: { WIDGET_ORIGINS: cdnOrigin }, chromiumArgs: [`--host-resolver-rules=MAP ${CDN_HOST} 127.0.0.1`] });
  stack = rig.stack;
  user = privateKeyToAccount(stack.devnet.keys.users[6] as Hex);
}, 120_000);

afterAll(() => stopWidgetRig(rig));

type Opened = WatchedPage & { widget: Frame };

/** The host page on `variant`, framing the widget served from `widgetBase` (default the service's own URL). */
async function open(variant: ReferenceVariant, widgetBase = stack.baseUrl): Promise<Opened> {
  const opened = await watchedPage(rig, (json) => signJson(user, json));
  const { page } = opened;
  const widget = new URLSearchParams({ url: "https://www.acme-quest.example/play", contract: APP_CONTRACT, chainId: "31337", name: "Acme Quest", wallet: user.address });
  const query = new URLSearchParams({ service: stack.baseUrl, src: `${widgetBase}/widgets/reviews/embed?${widget}`, variant });
  await page.goto(`${rig.hostOrigin}/?${query}`);
  await page.waitForSelector("html[data-ready=true]");
  expect(await page.evaluate(() => (window as unknown as { __bridgeError?: string }).__bridgeError)).toBeUndefined();
  return { ...opened, widget: await waitForWidget(page, widgetBase) };
}

const ignoredByHost = (page: Page) => page.evaluate(() => (window as unknown as { __ignored: string[] }).__ignored);

describeBrowser("the review widget framed by a host on the reference's bridge", () => {
  for (const variant of VARIANTS) {
    test(`${variant}: the host answers the widget, its wallet signs once, the review is on chain`, async () => {
      const { page, widget, problems, hostSignatures, requests } = await open(variant);
      await widget.waitForSelector("#widget[data-mode=integrated]");
      // The host read its own document, once.
      expect(requests.filter((r) => r.startsWith("GET /v1/trust-"))).toEqual([`GET /v1/${variant}`]);
      const nonceBefore = await easNonce(stack, user.address);
      const text = `Reviewed through a host on the ${variant} bridge.`;
      await writeReview(widget, text);
      await widget.click("#confirm-sign");
      await widget.waitForSelector("#success-view:not([hidden])", { timeout: 60_000 });
      expect(hostSignatures()).toBe(1);
      const uid = (await widget.innerText("#success-uid")) as Hex;
      expect(uid).toMatch(/^0x[0-9a-f]{64}$/);
      const review = await readReview(stack, uid);
      expect(review.attester.toLowerCase()).toBe(user.address.toLowerCase());
      expect(review.data).toMatchObject({ subject: "did:web:acme-quest.example", ratingValue: "4", reviewBody: text });
      expect(await easNonce(stack, user.address)).toBe(nonceBefore + 1n);
      await screenshots(page, `reference-${variant}-success`);
      await press(widget, "#success-view [data-close]");
      await page.waitForFunction(() => (window as unknown as { __messages: { type: string }[] }).__messages.some((m) => m.type === "omatrust:close"));
      const types = await messageTypes(page);
      expect(types).toContain("omatrust:ready");
      expect(types.filter((t) => t === "omatrust:signTypedData").length).toBe(1);
      // Nothing the widget sent was dropped: its origin is trusted by the document.
      expect(await ignoredByHost(page)).toEqual([]);
      expect(problems).toEqual([]);
      await page.context().close();
    }, 120_000);
  }

  test("both bridges allow exactly the document's contract and schema: anything else is refused without a wallet call", async () => {
    for (const variant of VARIANTS) {
      const { page, widget, hostSignatures } = await open(variant);
      await widget.waitForSelector("#widget[data-mode=integrated]");
      const tampered = [
        signingRequest("schema", { message: { schema: `0x${"ab".repeat(32)}` } }),
        signingRequest("contract", { domain: { verifyingContract: APP_CONTRACT } }),
        signingRequest("domain", { domain: { name: "Not EAS" } }),
        signingRequest("deadline", { message: { deadline: "1" } }),
        { ...signingRequest(""), id: undefined },
      ];
      // Posted from the widget's own window (the host trusts its origin and its frame), answers read there.
      const answers = await askFromWidget(widget, [...tampered, signingRequest("valid")]);
      expect(answers.slice(0, 5).map((a) => [a.type, a.id, a.error?.startsWith("Signing request rejected: ")])).toEqual([
        ["omatrust:signatureError", "schema", true],
        ["omatrust:signatureError", "contract", true],
        ["omatrust:signatureError", "domain", true],
        ["omatrust:signatureError", "deadline", true],
        ["omatrust:signatureError", "unknown", true],
      ]);
      expect(answers[0]!.error).toContain(`0x${"ab".repeat(32)}`);
      expect(answers[1]!.error).toContain(APP_CONTRACT);
      // The one request naming the service's own contract and schema is the only one the wallet saw.
      expect(answers[5]).toMatchObject({ type: "omatrust:signature", id: "valid" });
      expect(answers[5]!.signature).toMatch(/^0x[0-9a-f]{130}$/);
      expect(hostSignatures()).toBe(1);
      await page.context().close();
    }
  }, 120_000);

  test("both bridges trust a widget origin only the document's widgetOrigins names (WIDGET_ORIGINS)", async () => {
    for (const variant of VARIANTS) {
      const document = await (await fetch(`${stack.baseUrl}/v1/${variant}`)).json() as { widgetOrigins: string[] };
      expect(document.widgetOrigins).toContain(cdnOrigin);
      // Not under the document's base domain ("0.1"): trusted through widgetOrigins alone.
      const { page, widget, hostSignatures } = await open(variant, cdnOrigin);
      await widget.waitForSelector("#widget[data-mode=integrated]");
      const answers = await askFromWidget(widget, [signingRequest("cdn")]);
      expect(answers).toMatchObject([{ type: "omatrust:signature", id: "cdn" }]);
      expect(hostSignatures()).toBe(1);
      expect(await ignoredByHost(page)).toEqual([]);
      await page.context().close();
    }
  }, 120_000);

  test("both bridges ignore the service's widget served from an origin the document does not trust: basic mode, no wallet call", async () => {
    // The same service, reached as `localhost`: not in widgetOrigins (its origin is 127.0.0.1's) and not under the
    // document's base domain (the last two labels of 127.0.0.1, "0.1").
    const untrusted = stack.baseUrl.replace("127.0.0.1", "localhost");
    for (const variant of VARIANTS) {
      const { page, widget, hostSignatures } = await open(variant, untrusted);
      await widget.waitForSelector("#widget[data-mode=basic]");
      // A signing request from that widget, for the service's own contract and schema (one a trusted widget gets signed).
      await widget.evaluate((request) => window.parent.postMessage(request, "*"), JSON.parse(JSON.stringify(signingRequest("untrusted"))) as object);
      await page.waitForFunction(() => (window as unknown as { __messages: { id?: string }[] }).__messages.some((m) => m.id === "untrusted"));
      // Read in one evaluation: the page hears each message just before its bridge does, in the same dispatch, so every
      // protocol message it kept has been through the bridge, and each was dropped for its origin.
      const heard = await page.evaluate(() => {
        const host = window as unknown as { __messages: { type: string }[]; __ignored: string[] };
        return { types: host.__messages.map((m) => m.type), ignored: [...host.__ignored] };
      });
      expect(heard.types).toContain("omatrust:ready");
      expect(heard.types).toContain("omatrust:signTypedData");
      expect(heard.ignored).toEqual(heard.types.map(() => `untrusted origin ${untrusted}`));
      expect(hostSignatures()).toBe(0);
      await page.context().close();
    }
  }, 120_000);
});

/** A signing request as the widget sends it, for the service's chain, EAS contract and review schema; `change` overrides fields. */
function signingRequest(id: string, change: { domain?: object; message?: object } = {}) {
  return {
    type: "omatrust:signTypedData",
    id,
    domain: { name: "EAS", version: "1.4.0", chainId: 31337, verifyingContract: stack.service.easAddress, ...change.domain },
    types: ATTEST_TYPES,
    message: {
      attester: user.address, schema: stack.devnet.schemaUids["user-review"]!, recipient: `0x${"0".repeat(40)}`, expirationTime: "0",
      revocable: true, refUID: `0x${"0".repeat(64)}`, data: "0x", value: "0", nonce: "0", deadline: String(Math.floor(Date.now() / 1000) + 3600),
      ...change.message,
    },
  };
}

type Answer = { type: string; id?: string; error?: string; signature?: string };

/** Posts each request to the host page from the widget's window, one after another, and returns the host's answers. */
async function askFromWidget(widget: Frame, requests: object[]): Promise<Answer[]> {
  return await widget.evaluate(async (all) => {
    const answers: Answer[] = [];
    for (const request of all as { id?: string }[]) {
      const answered = new Promise<Answer>((resolve) => {
        const onMessage = (event: MessageEvent) => {
          const data = event.data as Answer | null;
          if (event.source !== window.parent || data?.id !== (request.id ?? "unknown")) return;
          window.removeEventListener("message", onMessage);
          resolve(data);
        };
        window.addEventListener("message", onMessage);
      });
      window.parent.postMessage(request, "*");
      answers.push(await answered);
    }
    return answers;
  }, JSON.parse(JSON.stringify(requests)) as object[]);
}
