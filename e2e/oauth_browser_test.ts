/**
 * OAuth pages in a real headless Chromium (issue 26): the consent page of `/oauth/authorize` served by the service
 * under the console's policy, signing in with an injected EIP-6963 wallet when no session is present, then the
 * consent form, Allow, and the browser back at the client's redirect URI with a code the token endpoint takes; and
 * the console's API clients (create: the secret shown once; delete) and the applications the person authorised (listed,
 * revoked). Screenshots at 1280 and 360 px go to
 * e2e/screenshots/. Skipped without Chromium locally, failing in CI, like the console's own browser test.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import { s256Challenge } from "../domain/oauth/mod.ts";
import { freePort, type Stack, startStack } from "./harness.ts";
import { injectWallet, walletAnswers } from "./support/browser_wallet.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
if (!HAVE_CHROMIUM && IN_CI) throw new Error(`CI=true but Chromium is not installed at ${CHROMIUM} (apt-get install chromium)`);
const describeBrowser = HAVE_CHROMIUM ? describe : describe.skip;
const SCREENSHOT_DIR = join(import.meta.dir, "screenshots");

let stack: Stack;
let base: string;
let browser: Browser;
let callback: ReturnType<typeof Bun.serve>;
const user = privateKeyToAccount(ANVIL_DEV_KEYS[7]! as Hex);

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  const port = freePort();
  base = `http://127.0.0.1:${port}`;
  // The page is served on a fixed port so that its origin is the service's public origin and the issuer.
  stack = await startStack({ env: { PORT: String(port), PUBLIC_BASE_URL: base, SIWE_CHALLENGE_RATE_PER_MINUTE: "1000" } });
  // The client application's redirect URI: a page that only says it got the answer.
  callback = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("<!doctype html><title>client</title><p>back at the client", { headers: { "content-type": "text/html" } }) });
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  callback?.stop(true);
  await stack?.stop();
});

async function newPage(problems: string[]): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) problems.push(`csp: ${message.text()}`);
  });
  await injectWallet(page, walletAnswers(user));
  return page;
}

async function screenshots(page: Page, name: string): Promise<void> {
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 900 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect({ name, width, overflow }).toEqual({ name, width, overflow: 0 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

describeBrowser("OAuth pages in a browser", () => {
  test("consent: sign in with the wallet on the service's page, the scopes shown, Allow, back at the client with a code that the token endpoint takes", async () => {
    const redirect = `http://127.0.0.1:${callback.port}/callback`;
    const registered = await (await fetch(`${base}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Release bot", redirect_uris: [redirect] }),
    })).json() as { client_id: string };
    const verifier = "v".repeat(50);
    const url = new URL(`${base}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      response_type: "code", client_id: registered.client_id, redirect_uri: redirect, scope: "witness:write account:read",
      state: "s-123", code_challenge: s256Challenge(verifier), code_challenge_method: "S256",
    })) url.searchParams.set(k, v);
    const problems: string[] = [];
    const page = await newPage(problems);
    const first = await page.goto(url.href);
    expect(first!.headers()["content-security-policy"]).toContain("default-src 'none'");
    expect(first!.headers()["x-frame-options"]).toBe("DENY");
    await page.waitForSelector("html[data-ready=true]");
    expect(await page.locator("#consent-client").innerText()).toBe("Release bot");
    expect(await page.locator("#consent-scopes li").count()).toBe(2);
    await page.waitForSelector("#wallet-list button");
    await screenshots(page, "oauth-sign-in");

    // Sign in: the page signs the SIWE message with the wallet and shows itself again, now with the form.
    await page.click("#wallet-list button");
    await page.waitForSelector("#consent-form");
    expect((await page.locator("#consent-account").innerText()).toLowerCase()).toBe(user.address.toLowerCase());
    expect(await page.locator("#consent-form input[name=csrf_token]").count()).toBe(1);
    expect(await page.locator("#consent-unverified").innerText()).toContain("registered itself");
    // Allow waits until the page has been visible and focused a moment, and goes off again when it loses focus: a
    // click meant for another site's window closing on top of it never lands on Allow.
    await page.waitForFunction(() => !(document.getElementById("consent-approve") as HTMLButtonElement).disabled);
    await page.evaluate(() => window.dispatchEvent(new Event("blur")));
    expect(await page.locator("#consent-approve").isDisabled()).toBe(true);
    await page.evaluate(() => window.dispatchEvent(new Event("focus")));
    await page.waitForFunction(() => !(document.getElementById("consent-approve") as HTMLButtonElement).disabled);
    await screenshots(page, "oauth-consent");
    await Promise.all([page.waitForURL((u) => u.href.startsWith(redirect)), page.click("#consent-approve")]);
    const back = new URL(page.url());
    expect(back.searchParams.get("state")).toBe("s-123");
    expect(back.searchParams.get("iss")).toBe(base);
    const code = back.searchParams.get("code")!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const tokens = await (await fetch(`${base}/oauth/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "authorization_code", client_id: registered.client_id, code, redirect_uri: redirect, code_verifier: verifier }),
    })).json() as { access_token: string; scope: string };
    expect(tokens.scope).toBe("witness:write account:read");
    const me = await (await fetch(`${base}/api/private/accounts/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).json() as { wallets: { address: string }[] };
    expect(me.wallets[0]!.address).toBe(user.address.toLowerCase());
    expect(problems).toEqual([]);
    await page.context().close();
  }, 60_000);

  test("an unusable request is shown on the service's page, not sent anywhere", async () => {
    const problems: string[] = [];
    const page = await newPage(problems);
    const answer = await page.goto(`${base}/oauth/authorize?response_type=code&client_id=nobody&redirect_uri=https://evil.test/cb`);
    expect(answer!.status()).toBe(400);
    expect(new URL(page.url()).origin).toBe(base);
    expect(await page.locator("#consent-error").innerText()).toContain("not registered");
    await screenshots(page, "oauth-error");
    expect(problems).toEqual([]);
    await page.context().close();
  }, 30_000);

  test("the console's API clients: created with the scopes ticked, the secret shown once, listed without it, deleted", async () => {
    const problems: string[] = [];
    const page = await newPage(problems);
    await page.goto(`${base}/#account`);
    await page.waitForSelector("html[data-ready=true]");
    await page.waitForSelector("#wallet-list button");
    await page.click("#wallet-list button");
    await page.waitForSelector("#account-panel:not([hidden])");
    await page.waitForSelector("#api-clients-none");
    // Nothing ticked is refused, never a client with every scope.
    for (const box of await page.locator("#api-client-scopes input[name=scope]").all()) await box.uncheck();
    await page.fill("#api-client-name", "No scopes");
    await page.click("#api-client-form button[type=submit]");
    await page.waitForFunction(() => document.getElementById("api-client-status")?.textContent?.includes("Tick at least one scope"));
    expect(await page.locator("#api-clients li").count()).toBe(0);
    for (const box of await page.locator("#api-client-scopes input[name=scope]").all()) await box.check();
    await page.fill("#api-client-name", "CI pipeline");
    await page.uncheck("#api-client-scopes input[value='keys:write']");
    await page.uncheck("#api-client-scopes input[value='subjects:write']");
    await page.uncheck("#api-client-scopes input[value='webhooks:write']");
    await page.click("#api-client-form button[type=submit]");
    await page.waitForSelector("#api-client-new-secret");
    const secret = await page.locator("#api-client-new-secret").innerText();
    const clientId = await page.locator("#api-client-new-id").innerText();
    expect(secret).toMatch(/^atss_/);
    // The list is fetched again after the secret is shown: wait for it, do not read it in the same breath.
    await page.waitForSelector("#api-clients li");
    // The secret's card has the focus, as the webhook secret's has (a keyboard user tabbed past every scope box).
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("api-client-secret");
    expect(await page.locator("#api-clients li").count()).toBe(1);
    // The form is cleared: a second Enter does not make a second client.
    expect(await page.locator("#api-client-name").inputValue()).toBe("");
    expect(await page.locator("#api-clients").innerText()).not.toContain(secret);
    await page.locator("#api-client-secret").scrollIntoViewIfNeeded();
    await screenshots(page, "api-clients");
    // The secret works at the token endpoint for the scopes ticked, not for one left out.
    const basic = `Basic ${btoa(`${clientId}:${secret}`)}`;
    const granted = await fetch(`${base}/oauth/token`, { method: "POST", headers: { authorization: basic }, body: new URLSearchParams({ grant_type: "client_credentials" }) });
    expect((await granted.json() as { scope: string }).scope).toBe("witness:write relay:write rpc:read account:read");
    const beyond = await fetch(`${base}/oauth/token`, { method: "POST", headers: { authorization: basic }, body: new URLSearchParams({ grant_type: "client_credentials", scope: "keys:write" }) });
    expect(beyond.status).toBe(400);
    await page.click("#api-clients li button");
    await page.waitForSelector("#api-clients-none");
    const after = await fetch(`${base}/oauth/token`, { method: "POST", headers: { authorization: basic }, body: new URLSearchParams({ grant_type: "client_credentials" }) });
    expect(after.status).toBe(401);
    expect(problems).toEqual([]);
    await page.context().close();
  }, 60_000);

  test("the console's authorised applications: an application allowed on the consent page is listed with its scopes and revoked, its tokens refused at once", async () => {
    const redirect = `http://127.0.0.1:${callback.port}/callback`;
    const registered = await (await fetch(`${base}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Docs assistant", redirect_uris: [redirect] }),
    })).json() as { client_id: string };
    const verifier = "w".repeat(50);
    const url = new URL(`${base}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      response_type: "code", client_id: registered.client_id, redirect_uri: redirect, scope: "rpc:read account:read",
      state: "s-456", code_challenge: s256Challenge(verifier), code_challenge_method: "S256",
    })) url.searchParams.set(k, v);
    const problems: string[] = [];
    const page = await newPage(problems);
    await page.goto(url.href);
    await page.waitForSelector("html[data-ready=true]");
    await page.waitForSelector("#wallet-list button");
    await page.click("#wallet-list button");
    await page.waitForSelector("#consent-form");
    await Promise.all([page.waitForURL((u) => u.href.startsWith(redirect)), page.click("#consent-approve")]);
    const code = new URL(page.url()).searchParams.get("code")!;
    const tokens = await (await fetch(`${base}/oauth/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "authorization_code", client_id: registered.client_id, code, redirect_uri: redirect, code_verifier: verifier }),
    })).json() as { access_token: string; refresh_token: string };
    const me = () => fetch(`${base}/api/private/accounts/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect((await me()).status).toBe(200);

    await page.goto(`${base}/#account`);
    await page.waitForSelector("html[data-ready=true]");
    await page.waitForSelector("#wallet-list button");
    await page.click("#wallet-list button");
    await page.waitForSelector("#account-panel:not([hidden])");
    const row = page.locator(`#authorizations li[data-client-id="${registered.client_id}"]`);
    await row.waitFor();
    expect(await row.innerText()).toContain("Docs assistant");
    expect(await row.innerText()).toContain("rpc:read account:read");
    await page.locator("#authorization-list").scrollIntoViewIfNeeded();
    await screenshots(page, "oauth-authorizations");
    await row.locator("button").click();
    await row.waitFor({ state: "detached" });
    expect(await page.locator("#authorization-status").innerText()).toContain("Revoked Docs assistant");
    expect((await me()).status).toBe(401);
    const refreshed = await fetch(`${base}/oauth/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "refresh_token", client_id: registered.client_id, refresh_token: tokens.refresh_token }),
    });
    expect(refreshed.status).toBe(400);
    expect(problems).toEqual([]);
    await page.context().close();
  }, 60_000);
});
