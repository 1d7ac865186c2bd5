/**
 * What the review widget's browser tests share (e2e/widget_browser_test.ts, e2e/widget_reference_host_browser_test.ts):
 * the service, the host page's server (another origin framing the widget, its script bundled from a host entry in this
 * folder) and Chromium started together, pages that record their problems, finding the widget's frame, pressing its
 * controls, screenshots, the host wallet's signing and reading a review back from EAS.
 */
import { describe, expect } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Frame, type Page } from "playwright-core";
import { createPublicClient, type Hex, http } from "viem";
import type { privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import { decodeSchemaData } from "../../domain/schema_data.ts";
import { findSchemaByName } from "../../domain/schemas.ts";
import { freePort, type Stack, startStack } from "../harness.ts";
import { waitFor } from "./wait_for.ts";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
if (!HAVE_CHROMIUM && IN_CI) throw new Error(`CI=true but Chromium is not installed at ${CHROMIUM} (apt-get install chromium)`);
/** Without Chromium the tests are skipped locally and fail in CI (CI=true), like the console's. */
export const describeBrowser = HAVE_CHROMIUM ? describe : describe.skip;

export const SCREENSHOT_DIR = join(import.meta.dir, "..", "screenshots");
const WIDTHS = [1280, 360] as const;

/**
 * The host page: static HTML framing the widget (`<iframe id="omatrust-widget">`), and its script bundled from
 * `entry` (a file of this folder). Served on 127.0.0.1; the tests open it as `http://localhost:<port>`, another origin
 * than the service's 127.0.0.1 (and, like it, a secure context).
 */
export async function startWidgetHost(entry: string): Promise<ReturnType<typeof Bun.serve>> {
  const built = await Bun.build({ entrypoints: [join(import.meta.dir, entry)], target: "browser", format: "esm" });
  if (!built.success) throw new Error(built.logs.map(String).join("; "));
  const script = await built.outputs[0]!.text();
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Acme Quest</title><link rel="stylesheet" href="/host.css"><script type="module" src="/host.js"></script></head>
<body><header><h1>Acme Quest</h1><p>A game on chain. Tell others what you think.</p></header>
<iframe id="omatrust-widget" title="Review Acme Quest"></iframe></body></html>`;
  const css = `body{margin:0;padding:16px;font:15px system-ui,sans-serif;background:#e9edf5;color:#14213d}
header{max-width:440px;margin:0 auto 12px}h1{margin:0;font-size:20px}p{margin:4px 0 0;color:#5b6478}
iframe{display:block;border:0;width:100%;max-width:440px;height:860px;margin:0 auto;background:transparent}`;
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/host.js") return new Response(script, { headers: { "content-type": "text/javascript" } });
      if (path === "/host.css") return new Response(css, { headers: { "content-type": "text/css" } });
      return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
    },
  });
}

/** What a widget test runs against: the service on the devnet, the host page's server and Chromium. */
export type WidgetRig = {
  stack: Stack;
  host: ReturnType<typeof Bun.serve>;
  /** `http://localhost:<port>`: another site than the service's 127.0.0.1 (and, like it, a secure context). */
  hostOrigin: string;
  browser: Browser;
};

/** How {@link startWidgetRig} starts the service and Chromium. */
export type WidgetRigOptions = {
  /** The service's port (default a free one), fixed so that PUBLIC_BASE_URL (its own origin in the trust documents) is its real origin. */
  port?: number | undefined;
  /** More of the service's environment. */
  env?: Record<string, string> | undefined;
  /** Wraps the fetch the service uses for RPC (see startStack). */
  wrapRpcFetch?: ((inner: typeof fetch) => typeof fetch) | undefined;
  /** More of Chromium's command line. */
  chromiumArgs?: string[] | undefined;
};

/** Starts the service, the host page bundled from `hostEntry` (see {@link startWidgetHost}) and Chromium; a failed start stops what it started. */
export async function startWidgetRig(hostEntry: string, options: WidgetRigOptions = {}): Promise<WidgetRig> {
  const port = options.port ?? freePort();
  const stack = await startStack({ wrapRpcFetch: options.wrapRpcFetch, env: { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, ...options.env } });
  let host: ReturnType<typeof Bun.serve> | undefined;
  try {
    host = await startWidgetHost(hostEntry);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", ...(options.chromiumArgs ?? [])] });
    return { stack, host, hostOrigin: `http://localhost:${host.port}`, browser };
  } catch (error) {
    await host?.stop(true);
    await stack.stop();
    throw error;
  }
}

/** Stops what {@link startWidgetRig} started (nothing when it never did). */
export async function stopWidgetRig(rig: WidgetRig | undefined): Promise<void> {
  await rig?.browser.close();
  await rig?.host.stop(true);
  await rig?.stack.stop();
}

/** A page in a context of its own and what it saw. */
export type WatchedPage = {
  page: Page;
  /** Page errors and Content Security Policy reports. */
  problems: string[];
  /** The service's paths the page and its frames asked for, as `METHOD /path`. */
  requests: string[];
  /** How many times the host's wallet was asked to sign. */
  hostSignatures: () => number;
};

/**
 * A new page (1280 x 1000) that records its problems and its requests to the service; with `sign`, the host page's
 * wallet (`window.__hostSign`) signs through it, every call counted.
 */
export async function watchedPage(rig: WidgetRig, sign?: (json: string) => Promise<string>): Promise<WatchedPage> {
  const context = await rig.browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  let hostSignatures = 0;
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) problems.push(`csp: ${message.text()}`);
  });
  page.on("request", (request) => {
    if (request.url().startsWith(rig.stack.baseUrl)) requests.push(`${request.method()} ${new URL(request.url()).pathname}`);
  });
  if (sign !== undefined) {
    await page.exposeFunction("__hostSign", async (json: string) => {
      hostSignatures++;
      return await sign(json);
    });
  }
  return { page, problems, requests, hostSignatures: () => hostSignatures };
}

/** Signs typed data (JSON, big integers as strings) with `account`, as a host's wallet would. */
export async function signJson(account: ReturnType<typeof privateKeyToAccount>, json: string): Promise<string> {
  const typed = JSON.parse(json) as { domain: Record<string, unknown>; types: Record<string, { name: string; type: string }[]>; message: Record<string, unknown> };
  const message = { ...typed.message };
  for (const field of typed.types.Attest!) if (/^u?int/.test(field.type)) message[field.name] = BigInt(message[field.name] as string);
  return await account.signTypedData({ domain: typed.domain as never, types: typed.types, primaryType: "Attest", message });
}

/** The widget's frame once it has loaded from `widgetOrigin` and is ready. */
export async function waitForWidget(page: Page, widgetOrigin: string): Promise<Frame> {
  const handle = await page.waitForSelector("#omatrust-widget");
  // The host sets the frame's src once its bridge listens; until then its frame is about:blank.
  const prefix = `${new URL(widgetOrigin).origin}/`;
  const frame = await waitFor(`the widget's frame from ${widgetOrigin}`, async () => {
    const found = await handle.contentFrame();
    return found?.url().startsWith(prefix) === true ? found : undefined;
  });
  await frame.waitForSelector("html[data-ready=true]");
  return frame;
}

/** Full-page screenshots at 1280 and 360 px as `widget-<name>-<width>.png`, none wider than its viewport. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 1000 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect({ name, width, overflow }).toEqual({ name, width, overflow: 0 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, `widget-${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 1000 });
}

/**
 * Presses a control of the widget from the keyboard: focused, then Enter (a button) or Space (a radio), as a keyboard
 * user would.
 *
 * Used for every control pressed after {@link screenshots}. The widget is another site's frame (its own process), and
 * the browser routes a mouse event to such a frame by the compositor's hit-test data; after the screenshots' resizes
 * that data was sometimes stale for as long as a test would wait, so clicks (and even plain moves) reached the page
 * instead of the frame: one full-suite run in five to twenty was red, however the test waited or repainted. A key goes
 * to the focused frame, with no hit test, so the outcome no longer rests on when the frame's compositor catches up.
 * Clicks with the mouse stay for everything before the first resize of a page.
 */
export async function press(widget: Frame, control: string, key: "Enter" | "Space" = "Enter"): Promise<void> {
  await widget.focus(control);
  await widget.page().keyboard.press(key);
}

/** The types of the protocol messages the host page got (its `window.__messages`). */
export const messageTypes = (page: Page) => page.evaluate(() => (window as unknown as { __messages: { type: string }[] }).__messages.map((m) => m.type));

/**
 * Fills the form (4 stars, a text) and goes to the confirmation: with the mouse on a page not yet resized, from the
 * keyboard (Space on the fourth star's radio, Enter on the button) once it has been (see {@link press}); `shot` takes
 * the screenshots before going on.
 */
export async function writeReview(widget: Frame, text: string, options: { shot?: { page: Page; name: string }; resized?: boolean } = {}): Promise<void> {
  let resized = options.resized === true;
  if (resized) await press(widget, "label.star[data-star='4'] input", "Space");
  else await widget.click("label.star[data-star='4']");
  await widget.fill("#review-body", text);
  if (options.shot !== undefined) {
    await screenshots(options.shot.page, options.shot.name);
    resized = true;
  }
  if (resized) await press(widget, "#review-next");
  else await widget.click("#review-next");
  await widget.waitForSelector("#confirm-view:not([hidden])");
}

/** The attester's EAS nonce, read from the chain: it moves by one for each review written. */
export async function easNonce(stack: Stack, attester: Hex): Promise<bigint> {
  const client = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
  return await client.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [attester] }) as bigint;
}

/** A review as EAS holds it: its attester and its decoded `user-review` data. */
export async function readReview(stack: Stack, uid: Hex) {
  const client = createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
  const attestation = await client.readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [uid] });
  const decoded = decodeSchemaData(findSchemaByName("user-review")!.schema, attestation.data);
  return { attester: attestation.attester, data: decoded.ok ? decoded.value : undefined };
}
