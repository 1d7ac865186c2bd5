/**
 * Sign-in challenges are bounded (decisions §15): the real service on loopback, requests sent from chosen
 * loopback source addresses (127.0.0.x) so the service sees distinct client addresses, the SQLite file read
 * beside it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { request } from "node:http";
import { join } from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { silentLogger } from "../adapters/observability/mod.ts";
import { readConfig } from "../app/config.ts";
import { type Service, startService } from "../app/service.ts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
const ENV = { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP, SIWE_CHALLENGE_RATE_PER_MINUTE: "10" };

let stack: Stack;
let db: Database;
beforeAll(async () => {
  stack = await startStack({ env: ENV });
  db = new Database(join(stack.dir, "ats.sqlite"));
  db.exec("PRAGMA busy_timeout = 5000");
});
afterAll(async () => {
  db?.close();
  await stack?.stop();
});

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: Record<string, any> };

/** Sends a JSON request from the loopback address `from`, as a client at that address would. */
function send(base: string, method: string, path: string, options: { from: string; body?: unknown; cookie?: string }): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method,
      localAddress: options.from,
      agent: false,
      headers: {
        origin: APP,
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...(options.cookie === undefined ? {} : { cookie: options.cookie }),
      },
    }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === "" ? {} : JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(options.body === undefined ? undefined : JSON.stringify(options.body));
  });
}

const walletDid = (address: string) => `did:pkh:eip155:${stack.devnet.chainId}:${address}`;
const newWallet = () => privateKeyToAccount(generatePrivateKey());
const askChallenge = (from: string, address = newWallet().address, path = "/v1/session/wallet/challenge", base = stack.baseUrl) =>
  send(base, "POST", path, { from, body: { walletDid: walletDid(address), domain: "app.test", uri: `${APP}/login` } });

const rowsOfClient = (client: string) =>
  db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM challenges WHERE client_key = ?").get(client)!.n;
const rowsOfWallet = (address: string) =>
  db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM challenges WHERE address = ?").get(address.toLowerCase())!.n;

describe("sign-in challenge limits", () => {
  test("the eleventh challenge from one address within a minute is 429 RATE_LIMITED with Retry-After, and stores nothing", async () => {
    const from = "127.0.0.11";
    // Both paths of the route share one budget.
    const paths = ["/v1/session/wallet/challenge", "/api/private/session/wallet/challenge"];
    for (let i = 0; i < 10; i++) {
      const answer = await askChallenge(from, newWallet().address, paths[i % 2]);
      expect(answer.status).toBe(200);
    }
    const late = newWallet().address;
    const refused = await askChallenge(from, late, paths[1]);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: "Too many sign-in challenges from this address; try again later", code: "RATE_LIMITED" });
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    // CORS as every session route answers an allowlisted origin.
    expect(refused.headers["access-control-allow-origin"]).toBe(APP);
    expect(refused.headers["access-control-allow-credentials"]).toBe("true");
    expect(rowsOfClient(from)).toBe(10);
    expect(rowsOfWallet(late)).toBe(0);
    // Another client address is not affected.
    expect((await askChallenge("127.0.0.12", late)).status).toBe(200);
  });

  test("a stranger's full minute of challenges for a wallet leaves its owner, at another address, free to sign in", async () => {
    const owner = newWallet();
    const wallet = owner.address;
    // The stranger spends its address's whole rate on the owner's wallet.
    const asked = await Promise.all(Array.from({ length: 10 }, () => askChallenge("127.0.0.100", wallet)));
    expect(asked.map((a) => a.status)).toEqual(Array<number>(10).fill(200));
    expect((await askChallenge("127.0.0.100", wallet)).status).toBe(429);
    // The owner, at another address, in the same minute: a challenge, and a session from it.
    const mine = await askChallenge("127.0.0.101", wallet);
    expect(mine.status).toBe(200);
    const signature = await owner.signMessage({ message: mine.body.siweMessage });
    const verified = await send(stack.baseUrl, "POST", "/v1/session/wallet/verify", {
      from: "127.0.0.101",
      body: { challengeId: mine.body.challengeId, siweMessage: mine.body.siweMessage, signature },
    });
    expect(verified.status).toBe(200);
    // Other addresses asking for the wallet are each given theirs; no one's challenge uses up another's.
    for (let i = 0; i < 10; i++) expect((await askChallenge(`127.0.0.${102 + i}`, wallet)).status).toBe(200);
    const live = db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM challenges WHERE address = ? AND used_at_ms IS NULL")
      .get(wallet.toLowerCase())!.n;
    // The stranger's five newest live (its five older ones used up by its own newer ones), and the ten others'.
    expect(live).toBe(15);
    // The wallet's rate counts every address's: spent, it refuses an address that already has one of the minute's
    // (the owner's second here), never an address's first.
    const again = await askChallenge("127.0.0.101", wallet);
    expect(again.status).toBe(429);
    expect(again.body).toEqual({ error: "Too many sign-in challenges for this wallet; try again later", code: "RATE_LIMITED" });
    expect(Number(again.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(rowsOfWallet(wallet)).toBe(21);
    // One client past five live challenges for one wallet uses up its own oldest.
    const own = newWallet().address;
    for (let i = 0; i < 7; i++) expect((await askChallenge("127.0.0.120", own)).status).toBe(200);
    expect(db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM challenges WHERE address = ? AND used_at_ms IS NULL").get(own.toLowerCase())!.n).toBe(5);
  });

  test("a flood from one address adds only the rate's rows to the database", async () => {
    const from = "127.0.0.30";
    const before = db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM challenges").get()!.n;
    const answers = await Promise.all(Array.from({ length: 200 }, () => askChallenge(from)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(190);
    expect(answers.every((a) => a.status === 200 || a.headers["retry-after"] !== undefined)).toBe(true);
    expect(db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM challenges").get()!.n - before).toBe(10);
  });
});

describe("pruning on a timer", () => {
  let pruning: Service;
  beforeAll(async () => {
    // A second instance on the same file, pruning every 20 ms instead of every minute.
    pruning = await startService(readConfig({
      ...ENV,
      PORT: "0",
      RPC_URL: stack.devnet.rpcUrl,
      TRUST_ANCHORS_PATH: stack.devnet.trustAnchorsPath,
      DELEGATE_PRIVATE_KEY: stack.devnet.keys.delegate,
      DATABASE_PATH: join(stack.dir, "ats.sqlite"),
      DATA_DIR: stack.dir,
      INDEX_FOLLOW: "false",
    }), { log: silentLogger, pruneIntervalMs: 20 });
  });
  afterAll(async () => {
    await pruning?.stop();
  });

  /** Resolves once `done()` holds; the bound only stops a broken test, it measures nothing. */
  async function eventually(done: () => boolean) {
    for (let waited = 0; !done(); waited += 10) {
      if (waited > 20_000) throw new Error("the prune timer never removed the rows");
      await Bun.sleep(10);
    }
  }

  test("expired challenges and sessions are removed while the service runs; live ones stay", async () => {
    const from = "127.0.0.40";
    const wallet = newWallet();
    const challenge = await askChallenge(from, wallet.address, undefined, pruning.url);
    expect(challenge.status).toBe(200);
    const signature = await wallet.signMessage({ message: challenge.body.siweMessage });
    const verified = await send(pruning.url, "POST", "/v1/session/wallet/verify", {
      from,
      body: { challengeId: challenge.body.challengeId, siweMessage: challenge.body.siweMessage, signature },
    });
    expect(verified.status).toBe(200);
    const cookie = String(verified.headers["set-cookie"]).split(";")[0]!;
    expect((await send(pruning.url, "GET", "/v1/session/me", { from, cookie })).status).toBe(200);
    const live = await askChallenge(from, wallet.address, undefined, pruning.url);
    expect(live.status).toBe(200);
    const accountId = db.query<{ id: string }, [string]>("SELECT id FROM accounts WHERE address = ?").get(wallet.address.toLowerCase())!.id;
    const sessionsOf = () => db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM sessions WHERE account_id = ?").get(accountId)!.n;
    const challengeExists = (id: string) => db.query("SELECT 1 FROM challenges WHERE id = ?").get(id) !== null;
    expect(sessionsOf()).toBe(1);

    // The used challenge and the session expire (as if their time had passed); the second challenge does not.
    db.query("UPDATE challenges SET expires_at_ms = 1 WHERE id = ?").run(challenge.body.challengeId);
    db.query("UPDATE sessions SET expires_at_ms = 1 WHERE account_id = ?").run(accountId);
    await eventually(() => !challengeExists(challenge.body.challengeId) && sessionsOf() === 0);
    expect(challengeExists(live.body.challengeId)).toBe(true);
    const me = await send(pruning.url, "GET", "/v1/session/me", { from, cookie });
    expect([me.status, me.body.code]).toEqual([401, "UNAUTHENTICATED"]);
  });
});
