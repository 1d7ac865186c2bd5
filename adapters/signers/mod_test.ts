import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Keystore } from "ox";
import { privateKeyToAccount } from "viem/accounts";
import { nobleSecp256k1 } from "../crypto/mod.ts";
import { tempDirs } from "../../e2e/support/temp_dirs.ts";
import { openEthereumSigner, openJsonRpcSigner, openJwsSigner, parseSignerUri, SignerStartError } from "./mod.ts";

const KEY = `0x${"11".repeat(32)}` as const;
const ADDRESS = privateKeyToAccount(KEY).address;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const deps = (env: Record<string, string> = {}) => ({ audit: { log: quiet, timeoutMs: 1_000 }, env, secp256k1: nobleSecp256k1 });
const startError = async (run: () => Promise<unknown>) => {
  try {
    await run();
  } catch (error) {
    if (error instanceof SignerStartError) return error.message;
    throw error;
  }
  return "started";
};

const keystoreDir = tempDirs("ats-keystore-");

describe("signer URIs (decisions §27)", () => {
  test("each scheme parses; a malformed URI or an unknown scheme says what is wrong", () => {
    expect(parseSignerUri("env:DELEGATE_PRIVATE_KEY")).toEqual({ ok: true, value: { scheme: "env", variable: "DELEGATE_PRIVATE_KEY" } });
    expect(parseSignerUri(`jsonrpc:http://127.0.0.1:8545#${ADDRESS}`)).toMatchObject({ ok: true, value: { scheme: "jsonrpc", address: ADDRESS } });
    expect(parseSignerUri("keystore:/k.json?password-file=/p")).toMatchObject({ ok: true, value: { path: "/k.json", passwordFile: "/p" } });
    expect(parseSignerUri("vault:secret/key")).toMatchObject({ ok: false, error: expect.stringContaining("unknown scheme") });
    expect(parseSignerUri("jsonrpc:http://127.0.0.1:8545")).toMatchObject({ ok: false, error: expect.stringContaining("#<address>") });
    expect(parseSignerUri("keystore:/k.json")).toMatchObject({ ok: false, error: expect.stringContaining("password") });
  });

  test("keystore: paths are percent-decoded alike (a '+' stays a '+'); a name given twice or a malformed escape is refused saying so", () => {
    // The password file was form-decoded ('+' read as a space) while the keystore's path was not.
    expect(parseSignerUri("keystore:/k/a+b.json?password-file=/run/secrets/pw+1")).toEqual({ ok: true, value: { scheme: "keystore", path: "/k/a+b.json", passwordFile: "/run/secrets/pw+1", passwordEnv: undefined } });
    expect(parseSignerUri("keystore:/k/a%20b.json?password-file=/p%2Bq")).toMatchObject({ ok: true, value: { path: "/k/a b.json", passwordFile: "/p+q" } });
    // A second password-file= silently lost to the first.
    expect(parseSignerUri("keystore:/k.json?password-file=/a&password-file=/b")).toEqual({ ok: false, error: "keystore: password-file= is given twice" });
    // A bare "URI error" before.
    expect(parseSignerUri("keystore:/k/100%.json?password-file=/p")).toMatchObject({ ok: false, error: expect.stringContaining("write % as %25") });
    expect(parseSignerUri("keystore:/k.json?password-file=/p%zz")).toMatchObject({ ok: false, error: "keystore: password-file= needs a percent-encoded value" });
    expect(parseSignerUri("keystore:/k.json?password-file:/secret-pw")).toEqual({ ok: false, error: "keystore: takes password-file= or password-env=, not that" });
  });

  test("the process stops with one line naming the role: unknown scheme, missing variable, wrong address, wrong password", async () => {
    expect(await startError(() => openEthereumSigner("delegate", "vault:x", deps()))).toMatch(/^DELEGATE_SIGNER: unknown scheme/);
    expect(await startError(() => openEthereumSigner("witness", "env:NOPE", deps()))).toBe("WITNESS_SIGNER: NOPE is not set");
    const other = privateKeyToAccount(`0x${"22".repeat(32)}`).address;
    expect(await startError(() => openEthereumSigner("delegate", "env:K", deps({ K: KEY }), other)))
      .toBe(`DELEGATE_SIGNER: the key answers for ${ADDRESS}, not DELEGATE_ADDRESS ${other}`);
    const dir = keystoreDir();
    const [key, options] = Keystore.pbkdf2({ password: "right", iterations: 1000 });
    writeFileSync(join(dir, "key.json"), JSON.stringify(Keystore.encrypt(KEY, key, options)));
    writeFileSync(join(dir, "pw"), "s3cr3t-guess\n");
    const line = await startError(() => openEthereumSigner("delegate", `keystore:${join(dir, "key.json")}?password-file=${join(dir, "pw")}`, deps()));
    expect(line).toMatch(/^DELEGATE_SIGNER: .*MAC does not match/);
    expect(line).not.toContain("s3cr3t-guess");
    expect(line.split("\n")).toHaveLength(1);
  });

  test("a secret written where a variable's name or a file's path goes is never in the line the process stops with", async () => {
    // An operator moving from DELEGATE_PRIVATE_KEY writes env:<the key>; a password goes where its variable or file goes.
    const key = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
    const lines = [
      await startError(() => openEthereumSigner("delegate", `env:${key}`, deps())),
      await startError(() => openEthereumSigner("delegate", `env:${key.toUpperCase()}`, deps())),
      await startError(() => openJwsSigner("oauth", `env:${key}`, deps())),
      await startError(() => openEthereumSigner("witness", "keystore:/tmp/none.json?password-env=correct%20horse%20battery", deps())),
      await startError(() => openEthereumSigner("witness", "keystore:/etc/hostname?password-file=hunter2", deps())),
      await startError(() => openEthereumSigner("witness", "keystore:hunter2?password-file=/p", deps())),
    ];
    expect(lines).toEqual([
      "DELEGATE_SIGNER: the variable the URI names is not set",
      "DELEGATE_SIGNER: the variable the URI names is not set",
      "OAUTH_SIGNER: the variable the URI names is not set",
      "WITNESS_SIGNER: cannot read the keystore file /tmp/none.json",
      "WITNESS_SIGNER: cannot read the password file the URI names",
      "WITNESS_SIGNER: cannot read the keystore file the URI names",
    ]);
    const keystore = join(keystoreDir(), "key.json");
    const [derived, options] = Keystore.pbkdf2({ password: "right", iterations: 1000 });
    writeFileSync(keystore, JSON.stringify(Keystore.encrypt(KEY, derived, options)));
    expect(await startError(() => openEthereumSigner("witness", `keystore:${keystore}?password-env=correct%20horse`, deps())))
      .toBe("WITNESS_SIGNER: the variable the URI names (the keystore's password) is not set");
    // A name that looks like one is still named, so the operator knows which to set.
    expect(await startError(() => openEthereumSigner("witness", `keystore:${keystore}?password-env=KEYSTORE_PASSWORD`, deps())))
      .toBe("WITNESS_SIGNER: KEYSTORE_PASSWORD (the keystore's password) is not set");
  });

  test("a jsonrpc: signer signs one test typed data at start: another key, a refusal or no answer stops the start", async () => {
    const other = privateKeyToAccount(`0x${"22".repeat(32)}`);
    /** A remote signer holding `account`, answering eth_signTypedData_v4 (or failing as `mode` says). */
    const remote = (account: typeof other, mode: "sign" | "refuse" | "down" = "sign"): typeof fetch =>
      (async (_url: unknown, init?: RequestInit) => {
        if (mode === "down") throw new TypeError("connection refused");
        const call = JSON.parse(String(init!.body)) as { id: number; params: [string, string] };
        if (mode === "refuse") return Response.json({ jsonrpc: "2.0", id: call.id, error: { code: -32000, message: "no" } });
        const typed = JSON.parse(call.params[1]);
        return Response.json({ jsonrpc: "2.0", id: call.id, result: await account.signTypedData(typed) });
      }) as typeof fetch;
    const uri = `jsonrpc:http://signer.internal:9000#${ADDRESS}`;
    const open = (fetchFn: typeof fetch, expected?: string) => startError(() => openEthereumSigner("delegate", uri, { ...deps(), fetchFn }, expected));
    // Before, each of these started: the address was the URI's word only, DELEGATE_ADDRESS compared it with itself.
    expect(await open(remote(other), ADDRESS)).toBe(`DELEGATE_SIGNER: the signer refused a test signature or signed it with another key than ${ADDRESS}`);
    expect(await open(remote(other, "refuse"))).toBe(`DELEGATE_SIGNER: the signer refused a test signature or signed it with another key than ${ADDRESS}`);
    expect(await open(remote(other, "down"))).toBe("DELEGATE_SIGNER: the signer gave no test signature (unavailable)");
    expect(await open(remote(privateKeyToAccount(KEY)), ADDRESS)).toBe("started");
  });

  test("a keystore opens to its address; with its password in the environment it counts as a raw key", async () => {
    const dir = keystoreDir();
    const [key, options] = Keystore.scrypt({ password: "pw", n: 1 << 12, r: 8, p: 1 });
    writeFileSync(join(dir, "key.json"), JSON.stringify(Keystore.encrypt(KEY, key, options)));
    writeFileSync(join(dir, "pw"), "pw\n");
    const fromFile = await openEthereumSigner("delegate", `keystore:${join(dir, "key.json")}?password-file=${join(dir, "pw")}`, deps());
    expect(fromFile).toMatchObject({ address: ADDRESS, backend: "keystore", raw: false });
    const fromEnv = await openEthereumSigner("delegate", `keystore:${join(dir, "key.json")}?password-env=PW`, deps({ PW: "pw" }));
    expect(fromEnv.raw).toBe(true);
    expect((await openEthereumSigner("delegate", "env:K", deps({ K: KEY }))).raw).toBe(true);
  });

  test("an env: key signs transactions byte for byte as before, and each signature is one audit event", async () => {
    const events: Record<string, unknown>[] = [];
    const log = { ...quiet, info: (event: string, fields?: Record<string, unknown>) => void (event === "signature" && events.push(fields ?? {})) };
    const signer = await openEthereumSigner("delegate", "env:K", { ...deps({ K: KEY }), audit: { log, timeoutMs: 1_000 } });
    const tx = { chainId: 31337, nonce: 3, maxPriorityFeePerGas: 1n, maxFeePerGas: 2n, gas: 21_000n, to: ADDRESS, value: 0n, data: "0xabcd" as const };
    const signed = await signer.signTransaction(tx, { purpose: "transaction", ref: "sub-1" });
    const viem = await privateKeyToAccount(KEY).signTransaction({ ...tx, type: "eip1559" });
    expect(signed).toMatchObject({ ok: true, raw: viem });
    expect(events).toEqual([{ role: "delegate", backend: "env", key: ADDRESS, purpose: "transaction", digest: expect.stringMatching(/^0x[0-9a-f]{64}$/), ref: "sub-1" }]);
  });

  test("a JWS role takes a P-256 JWK from env: (ES256) with its RFC 7638 thumbprint", async () => {
    const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign"]);
    const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
    const signer = await openJwsSigner("oauth", "env:J", deps({ J: JSON.stringify(jwk) }));
    expect(signer.alg).toBe("ES256");
    expect(signer.publicJwk).toMatchObject({ kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y });
    const { calculateJwkThumbprint } = await import("jose");
    expect(signer.thumbprint).toBe(await calculateJwkThumbprint({ kty: "EC", crv: "P-256", x: jwk.x!, y: jwk.y! }));
    const signed = await signer.sign(new TextEncoder().encode("a.b"), { purpose: "access-token" });
    if (!signed.ok) throw new Error("not signed");
    const publicKey = await crypto.subtle.importKey("jwk", { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y }, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
    expect(await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, publicKey, new Uint8Array(signed.signature), new TextEncoder().encode("a.b"))).toBe(true);
  });

  test("a signer that never answers is a timeout after SIGNER_TIMEOUT_MS, and its state turns down", async () => {
    // A fetch that only ends when it is aborted: the outcome never depends on the machine's speed.
    const hanging = ((_: unknown, init?: RequestInit) =>
      new Promise<Response>((_, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason)))) as unknown as typeof fetch;
    const signer = openJsonRpcSigner("http://127.0.0.1:9", ADDRESS, { role: "delegate", audit: { log: quiet, timeoutMs: 100 }, fetchFn: hanging });
    expect(signer.state()).toBe("unknown");
    const tx = { chainId: 1, nonce: 0, maxPriorityFeePerGas: 1n, maxFeePerGas: 2n, gas: 21_000n, to: ADDRESS, value: 0n, data: "0x" as const };
    expect(await signer.signTransaction(tx, { purpose: "transaction" })).toEqual({ ok: false, reason: "timeout" });
    expect(signer.state()).toBe("down");
  });
});
