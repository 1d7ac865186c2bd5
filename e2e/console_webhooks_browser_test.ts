/**
 * The console's Webhooks section (issue 35, decisions §22) in a real headless Chromium against the real service on
 * the devnet: a test EIP-1193 wallet signs in, adds an endpoint pointing at a real receiver on loopback (allowed by
 * `ALLOW_PRIVATE_NETWORK`), reads the secret the page shows once, sends a test event with the page's button and sees
 * its delivery listed as delivered; the receiver's copy is verified with the official `standardwebhooks` package and
 * that secret. Then the endpoint is disabled (a test event waits, queued) and enabled (it goes out), its secret
 * rotated (the next test event verifies with the old and the new secret alike), and it is deleted. A receiver that
 * answers 503 is shown as not delivered, with the next attempt. Refusals show the service's code and message.
 * Screenshots at 1280 and 360 px go to e2e/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import type { Service } from "../app/service.ts";
import { freePort, type Stack, startStack } from "./harness.ts";
import { injectWallet, walletAnswers } from "./support/browser_wallet.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
if (!HAVE_CHROMIUM && IN_CI) throw new Error(`CI=true but Chromium is not installed at ${CHROMIUM} (apt-get install chromium)`);
const describeBrowser = HAVE_CHROMIUM ? describe : describe.skip;
const SCREENSHOT_DIR = join(import.meta.dir, "screenshots");
const WIDTHS = [1280, 360] as const;
/** Generous: nothing here asserts how long anything took, only what happened before this deadline. */
const DEADLINE_MS = 60_000;

type Received = { readonly headers: Record<string, string>; readonly body: string };

let stack: Stack;
let service: Service;
let browser: Browser;
let receiver: ReturnType<typeof Bun.serve>;
/** Every POST the receiver got at /hooks, in order. */
const received: Received[] = [];
/** Every POST the receiver answered 503 (at /failing). */
const refused: Received[] = [];
const user = privateKeyToAccount(ANVIL_DEV_KEYS[6]! as Hex);

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => (headers[name] = value));
      const body = await request.text();
      // /failing is a receiver that is down: 503, and the service retries later.
      if (new URL(request.url).pathname === "/failing") {
        refused.push({ headers, body });
        return new Response("down for maintenance", { status: 503 });
      }
      received.push({ headers, body });
      return new Response("thanks", { status: 200 });
    },
  });
  // One retry, long after the test ends: a refused delivery stays "retrying" while the test looks at it.
  stack = await startStack({ env: { ALLOW_PRIVATE_NETWORK: "true", SIWE_CHALLENGE_RATE_PER_MINUTE: "1000", WEBHOOK_RETRY_SECONDS: "3600" } });
  // A fixed port: the page's origin is the service's public origin (SIWE domain and the private routes' origin check).
  service = await stack.restartService({ PORT: String(freePort()) });
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await receiver?.stop(true);
});

async function open(hash: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/Failed to load resource/.test(message.text())) problems.push(`console: ${message.text()}`);
    if (/Content Security Policy/i.test(message.text())) problems.push(`csp: ${message.text()}`);
  });
  // The page talks to the service only; the receiver is the service's business.
  page.on("request", (request) => {
    if (!request.url().startsWith(service.url) && !request.url().startsWith("data:")) problems.push(`foreign request: ${request.url()}`);
  });
  await injectWallet(page, walletAnswers(user));
  await page.goto(`${service.url}/#${hash}`);
  await page.waitForSelector("html[data-ready=true]");
  return { page, problems };
}

async function screenshots(page: Page, name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect({ name, width, overflow }).toEqual({ name, width, overflow: 0 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** The status line once it is done (ok, warn or error), whatever it said while in progress. */
const statusOf = async (page: Page, id: string) => {
  await page.waitForFunction((sel) => /\b(ok|warn|error)\b/.test(document.getElementById(sel)!.className), id, { timeout: DEADLINE_MS });
  return await page.locator(`#${id}`).innerText();
};

/** Waits until the receiver holds `count` deliveries. */
async function receivedCount(count: number): Promise<Received[]> {
  const deadline = Date.now() + DEADLINE_MS;
  while (received.length < count) {
    if (Date.now() > deadline) throw new Error(`the receiver got ${received.length} deliveries, not ${count}`);
    await Bun.sleep(50);
  }
  return received.slice(0, count);
}

/** What the service lists for the signed-in account, read inside the page (its session). */
const listed = (page: Page) => page.evaluate(async () => (await (await fetch("/api/private/webhooks")).json()) as { webhooks: Record<string, unknown>[] });

describeBrowser("the console's Webhooks section in a browser", () => {
  test("add an endpoint, read its secret once, send a test event that a Standard Webhooks verifier accepts, rotate, disable, delete", async () => {
    const { page, problems } = await open("webhooks");
    expect(await page.locator("#webhooks-signed-out").isVisible()).toBe(true);
    expect(await page.locator("#webhooks-panel").isVisible()).toBe(false);
    await screenshots(page, "webhooks-signed-out");

    await page.goto(`${service.url}/#account`);
    await page.click('#wallet-list button[data-wallet="test.ats.wallet"]');
    expect(await statusOf(page, "account-status")).toBe(`Signed in as ${user.address}`);
    await page.goto(`${service.url}/#webhooks`);
    await page.waitForSelector("#webhooks-panel:not([hidden])");
    expect(await page.locator("#webhooks-signed-out").isVisible()).toBe(false);
    expect(await page.locator("#webhooks-none").innerText()).toBe("No endpoints yet: add one below.");

    // Refusals are the service's code and message, as a failure; never a JSON body.
    await page.fill("#webhook-url", "http://example.com/hooks");
    await page.click('#webhook-form button[type="submit"]');
    expect(await statusOf(page, "webhook-form-status")).toBe("INVALID_INPUT: url must be https:// (http:// only on loopback with ALLOW_PRIVATE_NETWORK)");
    expect(await page.locator("#webhook-form-status").getAttribute("class")).toContain("error");
    const url = `http://127.0.0.1:${receiver.port}/hooks`;
    await page.fill("#webhook-url", url);
    await page.fill("#webhook-subjects", "not a did");
    await page.click('#webhook-form button[type="submit"]');
    expect(await statusOf(page, "webhook-form-status")).toBe("INVALID_INPUT: subjects[0] must be a DID");
    expect(await page.locator("#webhook-secret").isVisible()).toBe(false);

    // The endpoint: two events ticked besides the defaults' one, a domain (made a did:web) and a DID watched.
    await page.fill("#webhook-subjects", "shop.example\ndid:web:other.example");
    await page.uncheck('#webhook-events input[value="attestation.revoked"]');
    await page.check('#webhook-events input[value="key.status_changed"]');
    await page.uncheck("#webhook-own");
    await page.click('#webhook-form button[type="submit"]');
    expect(await statusOf(page, "webhook-form-status")).toBe(`Added ${url}`);
    const secret = await page.locator("#webhook-new-secret").innerText();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(await page.locator("#webhook-secret-note").innerText()).toStartWith("Shown once: copy it now.");
    const card = page.locator("article.webhook");
    expect(await card.count()).toBe(1);
    const id = (await card.getAttribute("data-id"))!;
    expect(await card.getAttribute("data-disabled")).toBe("false");
    expect(await card.locator(".webhook-events").innerText()).toBe("attestation.created, key.status_changed");
    expect(await card.locator(".webhook-subjects li").allInnerTexts()).toEqual(["did:web:shop.example", "did:web:other.example"]);
    expect(await card.locator(".webhook-own").innerText()).toBe("no");
    // The form is ready for the next one; the list never carries a secret.
    expect(await page.inputValue("#webhook-url")).toBe("");
    const first = await listed(page);
    expect(first.webhooks.map((w) => [w.id, w.url, "secret" in w])).toEqual([[id, url, false]]);
    await screenshots(page, "webhooks-added");

    // The test event: the page shows its delivery once the receiver said 200.
    await card.locator("button.webhook-test").click();
    expect(await statusOf(page, "webhook-status")).toBe(`Test event delivered to ${url} (HTTP 200)`);
    const [delivery] = await receivedCount(1);
    const payload = new Webhook(secret).verify(delivery!.body, delivery!.headers) as { type: string; timestamp: string; data: Record<string, unknown> };
    expect(payload.type).toBe("webhook.test");
    expect(payload.data).toMatchObject({ endpointId: id, url });
    const eventId = delivery!.headers["webhook-id"]!;
    const row = page.locator(`#webhook-delivery-table tr[data-event-id="${eventId}"]`);
    expect(await row.getAttribute("data-state")).toBe("delivered");
    expect(await row.locator('td[data-label="Type"]').innerText()).toBe("webhook.test");
    expect(await row.locator('td[data-label="Attempts"]').innerText()).toBe("1");
    expect(await row.locator('td[data-label="Last answer"]').innerText()).toBe("HTTP 200");
    expect(await row.locator('td[data-label="Outcome"]').innerText()).toMatch(/^Delivered\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(await page.locator("#webhook-deliveries-url").innerText()).toBe(url);
    await page.click("#webhook-secret-done");
    expect(await page.locator("#webhook-secret").isVisible()).toBe(false);
    await screenshots(page, "webhooks-delivered");

    // Disable and enable again (PATCH disabled).
    await card.locator("button.webhook-toggle").click();
    expect(await statusOf(page, "webhook-status")).toBe(`Disabled ${url}`);
    expect(await page.locator("article.webhook").getAttribute("data-disabled")).toBe("true");
    expect(await page.locator("article.webhook .badge").innerText()).toBe("Disabled");
    expect((await listed(page)).webhooks[0]!.disabled).toBe(true);
    // A disabled endpoint takes no test event (the service refuses it: its tests would wait and go out together).
    expect(await page.locator("article.webhook button.webhook-test").isDisabled()).toBe(true);
    expect(await page.locator("article.webhook button.webhook-test").getAttribute("title")).toBe("Enable the endpoint to send a test event");
    await screenshots(page, "webhooks-disabled");
    await page.locator("article.webhook button.webhook-toggle").click();
    expect(await statusOf(page, "webhook-status")).toBe(`Enabled ${url}`);
    expect(await page.locator("article.webhook").getAttribute("data-disabled")).toBe("false");
    expect((await listed(page)).webhooks[0]!.disabled).toBe(false);
    await page.locator("article.webhook button.webhook-test").click();
    expect(await statusOf(page, "webhook-status")).toBe(`Test event delivered to ${url} (HTTP 200)`);
    const waited = (await receivedCount(2))[1]!;
    expect((new Webhook(secret).verify(waited.body, waited.headers) as { type: string }).type).toBe("webhook.test");

    // Rotate: a new secret, shown once; the next delivery carries both signatures, each verified by the official package.
    await page.locator("article.webhook button.webhook-rotate").click();
    expect(await statusOf(page, "webhook-status")).toBe(`Secret of ${url} rotated`);
    const rotated = await page.locator("#webhook-new-secret").innerText();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    expect(await page.locator("#webhook-secret-note").innerText()).toStartWith("Shown once: copy it now.");
    await screenshots(page, "webhooks-rotated");
    await page.locator("article.webhook button.webhook-test").click();
    expect(await statusOf(page, "webhook-status")).toBe(`Test event delivered to ${url} (HTTP 200)`);
    const second = (await receivedCount(3))[2]!;
    expect(second.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    for (const key of [rotated, secret]) expect((new Webhook(key).verify(second.body, second.headers) as { type: string }).type).toBe("webhook.test");
    expect(await page.locator("#webhook-delivery-table tbody tr").evaluateAll((rows) => rows.map((r) => [r.getAttribute("data-event-id"), r.getAttribute("data-state")])))
      .toEqual([[second.headers["webhook-id"]!, "delivered"], [waited.headers["webhook-id"]!, "delivered"], [eventId, "delivered"]]);

    // Delete: gone from the page and from the service.
    await page.locator("article.webhook button.webhook-delete").click();
    expect(await statusOf(page, "webhook-status")).toBe(`Deleted ${url}; nothing more is sent to it`);
    expect(await page.locator("#webhooks-none").innerText()).toBe("No endpoints yet: add one below.");
    expect(await page.locator("#webhook-delivery-table").count()).toBe(0);
    expect(await page.locator("#webhook-secret").isVisible()).toBe(false);
    expect((await listed(page)).webhooks).toEqual([]);
    expect(received).toHaveLength(3);

    // A receiver that answers 503: the page says so, with the next attempt, and lists the delivery as retrying.
    const failing = `http://127.0.0.1:${receiver.port}/failing`;
    await page.fill("#webhook-url", failing);
    await page.click('#webhook-form button[type="submit"]');
    expect(await statusOf(page, "webhook-form-status")).toBe(`Added ${failing}`);
    await page.locator("article.webhook button.webhook-test").click();
    const notDelivered = await statusOf(page, "webhook-status");
    expect(notDelivered).toStartWith(`Test event not delivered to ${failing}: last answer HTTP 503; next attempt `);
    expect(notDelivered).toMatch(/next attempt \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(await page.locator("#webhook-status").getAttribute("class")).toContain("warn");
    const retrying = page.locator("#webhook-delivery-table tbody tr");
    expect(await retrying.count()).toBe(1);
    expect(await retrying.getAttribute("data-state")).toBe("retrying");
    expect(await retrying.locator('td[data-label="Last answer"]').innerText()).toBe("HTTP 503");
    expect(await retrying.getAttribute("data-event-id")).toBe(refused[0]!.headers["webhook-id"]!);
    await page.click("#webhook-secret-done");
    await screenshots(page, "webhooks-retrying");
    await page.locator("article.webhook button.webhook-delete").click();
    expect(await statusOf(page, "webhook-status")).toBe(`Deleted ${failing}; nothing more is sent to it`);
    expect(refused).toHaveLength(1);
    expect(problems).toEqual([]);
    await page.context().close();
  }, 180_000);
});

describeBrowser("the console forgets an account's secrets when it signs out, and never shows them to the next", () => {
  test("Alice's API client and webhook secrets and status lines are gone after she signs out, for Bob on the same page, after an account change and after the session ends", async () => {
    const alice = privateKeyToAccount(generatePrivateKey());
    const bob = privateKeyToAccount(generatePrivateKey());
    const answers = new Map([[alice, walletAnswers(alice)], [bob, walletAnswers(bob)]]);
    let wallet = alice;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
    await injectWallet(page, (method, params) => answers.get(wallet)!(method, params));
    await page.goto(`${service.url}/#account`);
    await page.waitForSelector("html[data-ready=true]");
    /** Signs in with `who` on this page, without a reload, and waits for the page to say so. */
    const signIn = async (who: typeof alice) => {
      wallet = who;
      await page.click('#wallet-list button[data-wallet="test.ats.wallet"]');
      await page.waitForFunction((text) => document.getElementById("account-status")!.textContent === text, `Signed in as ${who.address}`, { timeout: DEADLINE_MS });
    };
    /** Creates an API client on the Account tab; its secret as the page shows it. */
    const createClient = async (name: string) => {
      await page.goto(`${service.url}/#account`);
      await page.fill("#api-client-name", name);
      await page.click('#api-client-form button[type="submit"]');
      await page.waitForFunction((text) => document.getElementById("api-client-status")!.textContent!.startsWith(text), `Created ${name} `, { timeout: DEADLINE_MS });
      return { id: await page.locator("#api-client-new-id").innerText(), secret: await page.locator("#api-client-new-secret").innerText() };
    };
    /** What the page holds of secrets and per-account lines: the DOM's text, hidden parts included. */
    const held = async () => ({
      apiSecretCard: [await page.locator("#api-client-secret").isVisible(), await page.locator("#api-client-secret").textContent()],
      webhookSecretCard: [await page.locator("#webhook-secret").isVisible(), await page.locator("#webhook-secret").textContent()],
      apiClientStatus: await page.locator("#api-client-status").textContent(),
      webhookFormStatus: await page.locator("#webhook-form-status").textContent(),
    });
    const nothingHeld = { apiSecretCard: [false, ""], webhookSecretCard: [false, ""], apiClientStatus: "", webhookFormStatus: "" };

    await signIn(alice);
    const aliceClient = await createClient("alice ci");
    await page.goto(`${service.url}/#webhooks`);
    await page.fill("#webhook-url", "http://127.0.0.1:9/alice-hook");
    await page.click('#webhook-form button[type="submit"]');
    expect(await statusOf(page, "webhook-form-status")).toBe("Added http://127.0.0.1:9/alice-hook");
    const aliceWebhookSecret = await page.locator("#webhook-new-secret").innerText();
    expect(aliceWebhookSecret).toStartWith("whsec_");

    // Alice signs out: nothing of hers stays in the page, hidden or not.
    await page.goto(`${service.url}/#account`);
    await page.click("#sign-out");
    await page.waitForFunction(() => document.getElementById("account-status")!.textContent === "Signed out", undefined, { timeout: DEADLINE_MS });
    const aliceLeft = [aliceClient.id, aliceClient.secret, aliceWebhookSecret, "alice ci", "alice-hook"];
    const inPage = async (values: string[]) => {
      const html = await page.content();
      return values.filter((value) => html.includes(value));
    };
    expect(await inPage(aliceLeft)).toEqual([]);
    expect(await held()).toEqual(nothingHeld);

    // Bob signs in on the same page (no reload): his account, never Alice's secrets or status lines.
    await signIn(bob);
    expect(await page.locator("#account-panel").isVisible()).toBe(true);
    expect(await page.locator("#api-clients-none").innerText()).toBe("No API clients yet.");
    expect(await held()).toEqual(nothingHeld);
    expect(await inPage(aliceLeft)).toEqual([]);
    await screenshots(page, "console-next-account-after-sign-out-account");
    await page.goto(`${service.url}/#webhooks`);
    await page.waitForSelector("#webhooks-panel:not([hidden])");
    expect(await page.locator("#webhooks-none").innerText()).toBe("No endpoints yet: add one below.");
    expect(await held()).toEqual(nothingHeld);
    await screenshots(page, "console-next-account-after-sign-out");

    // Another account signs in over Bob's session, without signing out: Bob's secret goes.
    const bobClient = await createClient("bob ci");
    expect(await page.locator("#api-client-secret").isVisible()).toBe(true);
    await signIn(alice);
    expect(await inPage([bobClient.id, bobClient.secret, "bob ci"])).toEqual([]);
    expect(await held()).toEqual(nothingHeld);

    // The session ends under the page (its cookie cleared): the service's 401 at the next action signs the page out.
    const again = await createClient("alice again");
    await context.clearCookies();
    await page.fill("#api-client-name", "refused");
    await page.click('#api-client-form button[type="submit"]');
    await page.waitForFunction(() => document.getElementById("account-panel")!.hidden, undefined, { timeout: DEADLINE_MS });
    expect(await page.locator("#account-status").innerText()).toStartWith("UNAUTHENTICATED: your session has ended");
    expect(await inPage([again.id, again.secret, "alice again", "alice-hook"])).toEqual([]);
    expect(await held()).toEqual(nothingHeld);
    expect(problems).toEqual([]);
    await context.close();
  }, 180_000);
});
