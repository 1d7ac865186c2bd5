/**
 * The review widget when "Check again" is answered 202 (decisions §23, §29; docs/widgets.md): a review whose first
 * send died with its instance after the relay handed its transaction to the node. The restarted service answers the
 * retry, the same bytes under the same `Idempotency-Key`, as the dead request's submission stands: while its
 * transaction is on its way, `202 {submissionId, state}` with `Location` (docs/endpoints.md "Retries"). That is no
 * attestation: the widget keeps the signed review, says the transaction is on its way naming the submission, and
 * offers Check again, which reads `GET /v1/submissions/{id}` and shows the UID and transaction once mined. Before, the
 * 202 was taken for the relay's success: "Review submitted" with UID "(not known yet)", no transaction, and the signed
 * review dropped while nothing was on chain.
 *
 * The chain is driven by hand (automine off, then `evm_mine`), and the submission settled by the next start's
 * reconciliation, as e2e/fee_bump_test.ts does: no step waits on a timer. A real Anvil and the service as a process
 * (e2e/support/restartable_service.ts), the widget opened top-level (basic mode) in Debian's chromium with an
 * EIP-1193 wallet backed by a test key. Screenshots go to e2e/screenshots/.
 */
import { expect, test } from "bun:test";
import { chromium } from "playwright-core";
import { createPublicClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { walletAnswers } from "./support/browser_wallet.ts";
import { freePort } from "./support/free_port.ts";
import { restartableService } from "./support/restartable_service.ts";
import { waitFor } from "./support/wait_for.ts";
import { CHROMIUM, describeBrowser, press, screenshots } from "./support/widget_page.ts";

const stack = restartableService("ats-widget-pending-");

describeBrowser("the review widget and a submission still on its way", () => {
  test("Check again answered 202: the signed review kept, the submission named, Check again offered; once mined, the UID", async () => {
    const devnet = stack.devnet();
    const chain = createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl) });
    // One origin for every start: the widget's page sends to `location.origin`.
    const port = freePort();
    const env = { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
    const first = await stack.start(env);
    const base = first.url.replace(/\/$/, "");
    const user = privateKeyToAccount(devnet.keys.users[3] as Hex);
    const delegate = privateKeyToAccount(devnet.keys.delegate as Hex).address;

    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    try {
      const page = await (await browser.newContext()).newPage();
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
      const walletCalls: string[] = [];
      await page.exposeFunction("__frameWallet", walletAnswers(user, { onCall: (method) => walletCalls.push(method) }));
      await page.addInitScript(`window.ethereum = { async request({ method, params }) {
        const a = JSON.parse(await window.__frameWallet(method, JSON.stringify(params ?? [])));
        if (a.error) throw Object.assign(new Error(a.error.message), { code: a.error.code }); return a.result; } };`);
      const posts: { key: string | undefined; body: string | null }[] = [];
      const statuses: number[] = [];
      page.on("request", (request) => {
        if (request.method() === "POST" && request.url() === `${base}/v1/delegated-attest`) posts.push({ key: request.headers()["idempotency-key"], body: request.postData() });
      });
      let reads = 0;
      page.on("response", (response) => {
        if (response.url() === `${base}/v1/delegated-attest`) statuses.push(response.status());
        if (response.url().startsWith(`${base}/v1/submissions/`)) reads++;
      });

      await page.goto(`${base}/widgets/reviews/embed?url=acme-pending.example&contract=0x${"11".repeat(20)}&chainId=31337`);
      await page.waitForSelector("html[data-ready=true]");
      await page.click("#connect");
      await page.waitForFunction((a) => document.getElementById("wallet-address")!.textContent === a, user.address);
      await page.click("label.star[data-star='4']");
      await page.fill("#review-body", "Sent while the service died");
      await page.click("#review-next");
      await page.waitForSelector("#confirm-view:not([hidden])");

      // The node stops mining: the relay's transaction waits in its pool while the request waits for its receipt, and
      // the instance dies there.
      await stack.rpc("evm_setAutomine", [false]);
      await page.click("#confirm-sign");
      const tx = await stack.pendingFrom(delegate);
      first.proc.kill("SIGKILL");
      await first.proc.exited;
      await page.waitForSelector("#unsure-view:not([hidden])", { timeout: 60_000 });

      // The same instance comes back (same port, same SQLite file: the dead request's lease ended at start).
      const second = await stack.start(env);
      await page.click("#check-again");
      // Its answer shown, whichever view it is (before: the success view).
      await page.waitForFunction(() => document.documentElement.dataset.view === "success-view" || document.getElementById("unsure-text")?.textContent?.includes("Its submission:") === true, undefined, { timeout: 60_000 });
      expect(await page.evaluate(() => document.documentElement.dataset.view)).toBe("unsure-view");
      const text = await page.innerText("#unsure-text");
      const submissionId = /Its submission: ([A-Za-z0-9_-]+)\./.exec(text)?.[1];
      expect(text).toBe(`The review's transaction is still on its way. Its submission: ${submissionId}. Check again in a minute.`);
      // Nothing is on chain, and the widget says nothing is known yet: no success, the signed review kept for Check again.
      expect(await chain.getTransactionReceipt({ hash: tx }).catch(() => null)).toBeNull();
      expect(await page.evaluate(() => document.documentElement.dataset.view)).toBe("unsure-view");
      expect(await page.innerText("#unsure-title")).toBe("The review may have been written");
      expect(await page.isHidden("#success-view")).toBe(true);
      expect(await page.isEnabled("#check-again")).toBe(true);
      const onItsWay = await (await fetch(`${base}/v1/submissions/${submissionId}`)).json() as { state: string };
      expect(["sent", "replaced"]).toContain(onItsWay.state);
      await screenshots(page, "submission-on-its-way");

      // Still on its way: Check again reads the submission the 202 named, sends nothing.
      await press(page.mainFrame(), "#check-again");
      await page.waitForFunction(() => document.getElementById("unsure-text")?.textContent?.includes("Its transaction: 0x") === true);
      expect(await page.innerText("#unsure-text")).toMatch(new RegExp(`^The review's transaction is still on its way\\. Its submission: ${submissionId}\\. Its transaction: 0x[0-9a-f]{64}\\. Check again in a minute\\.$`));
      expect(await page.evaluate(() => document.documentElement.dataset.view)).toBe("unsure-view");

      // The node mines it; the reconciler's round (here: the next start's) settles the submission.
      await stack.rpc("evm_mine");
      await stack.rpc("evm_setAutomine", [true]);
      expect(await second.stop()).toBe(0);
      await stack.start(env);
      const mined = await waitFor("the submission mined", async () => {
        const read = await (await fetch(`${base}/v1/submissions/${submissionId}`)).json() as { state: string; uid: Hex | null; txHash: Hex };
        return read.state === "mined" || read.state === "confirmed" ? read : undefined;
      });
      expect(mined.uid).toMatch(/^0x[0-9a-f]{64}$/);

      await press(page.mainFrame(), "#check-again");
      await page.waitForSelector("#success-view:not([hidden])", { timeout: 60_000 });
      expect(await page.innerText("#success-title")).toBe("Review submitted");
      expect(await page.innerText("#success-uid")).toBe(mined.uid!);
      expect(await page.innerText("#success-tx")).toBe(mined.txHash);
      const attestation = await chain.readContract({ address: devnet.easAddress as Hex, abi: EAS_ABI, functionName: "getAttestation", args: [mined.uid!] });
      expect(attestation.attester).toBe(user.address);
      await screenshots(page, "submission-mined");

      // One signature, the same bytes under the same key twice (the first send and the Check again answered 202), then
      // reads only.
      expect(walletCalls.filter((m) => m === "eth_signTypedData_v4")).toHaveLength(1);
      // The first send's answer never came (the instance died); the second was the 202. Two reads of the submission.
      expect(statuses).toEqual([202]);
      expect(reads).toBe(2);
      expect(posts).toHaveLength(2);
      expect(posts[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
      expect(posts[1]).toEqual(posts[0]!);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 240_000);
});
