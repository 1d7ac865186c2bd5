/**
 * `kill -9` of the service in the middle of concurrent delegated attestations, on its embedded devnet
 * (issue 15): the next start stops the Anvil the killed service left, settles every open submission, and a
 * resubmission of every signature ends with exactly one attestation per attester (none twice, none burnt).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { rpcAnswers } from "./support/devnet_fixtures.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-crash-"));
const running: ServiceProcess[] = [];
afterAll(async () => {
  for (const service of running) {
    if (service.proc.exitCode === null && service.proc.signalCode === null) await service.stop();
  }
  rmSync(dir, { recursive: true, force: true });
});

// Info-level logs: a failure shows what the restart said (see `stderrTail`).
const env = { DATA_DIR: dir, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", ...TEST_RELAY_LIMITS };

async function start(): Promise<ServiceProcess & { rpcUrl: string }> {
  const service = await startServiceProcess(env, 60_000);
  running.push(service);
  const rpcUrl = /devnet RPC (\S+)/.exec(service.banner)?.[1];
  if (rpcUrl === undefined) throw new Error(`no devnet RPC in: ${service.banner}`);
  return Object.assign(service, { rpcUrl });
}

type Anchors = { chains: Record<string, { easContract: Hex; schemas: Record<string, Hex> }> };

async function signedReviews(baseUrl: string, count: number) {
  const anchors = await (await fetch(`${baseUrl}/v1/trust-anchors`)).json() as Anchors;
  const [caip2, chain] = Object.entries(anchors.chains)[0]!;
  const def = findSchemaByName("user-review")!;
  return await Promise.all(Array.from({ length: count }, async (_, i) => {
    const account = privateKeyToAccount(generatePrivateKey());
    const prepared = prepareDelegatedAttestation({
      schema: { uid: chain.schemas["user-review"]!, schema: def.schema, revocable: def.revocable },
      data: { subject: `did:web:crash${i}.example`, version: "1.0.0", ratingValue: 3, reviewBody: "kill -9", screenshotUrls: [], proofs: [] },
      attester: account.address,
      nonce: 0n,
      chainId: Number(caip2.split(":")[1]),
      easAddress: chain.easContract,
    });
    const signature = await account.signTypedData(signableTypedData(prepared));
    return { attester: account.address, easAddress: chain.easContract, body: JSON.stringify({ prepared, signature, attester: account.address }) };
  }));
}

const attest = (baseUrl: string, body: string) =>
  fetch(`${baseUrl}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json" }, body });

async function attestationsByAttester(rpcUrl: string, easAddress: Hex): Promise<Map<string, number>> {
  const client = createPublicClient({ cacheTime: 0, transport: http(rpcUrl) });
  const logs = await client.getContractEvents({ address: easAddress, abi: EAS_ABI, eventName: "Attested", fromBlock: 0n });
  const counts = new Map<string, number>();
  for (const log of logs) {
    const attester = String(log.args.attester).toLowerCase();
    counts.set(attester, (counts.get(attester) ?? 0) + 1);
  }
  return counts;
}

describe("kill -9 during concurrent submissions", () => {
  test("restart and resubmit: one attestation per attester, no burnt signature, the left-over Anvil stopped, state kept", async () => {
    const first = await start();
    const reviews = await signedReviews(first.url, 24);
    const inFlight = reviews.map((r) => attest(first.url, r.body).then((res) => res.status, () => 0));
    await Bun.sleep(130);
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    const before = await Promise.all(inFlight);
    const answered200 = reviews.filter((_, i) => before[i] === 200).map((r) => r.attester.toLowerCase());

    const second = await start();
    // The killed service's Anvil does not live on beside the new one.
    if (second.rpcUrl !== first.rpcUrl) expect(await rpcAnswers(first.rpcUrl)).toBe(false);

    const after = await Promise.all(reviews.map(async (r) => {
      const res = await attest(second.url, r.body);
      return { status: res.status, body: await res.json() as { code?: string; details?: string; uid?: string } };
    }));
    for (const answer of after) {
      const settled = answer.status === 200 || (answer.status === 409 && answer.body.code === "DUPLICATE" && /^0x[0-9a-f]{64}$/.test(answer.body.details ?? ""));
      expect({ settled, answer }).toMatchObject({ settled: true });
    }
    const counts = await attestationsByAttester(second.rpcUrl, reviews[0]!.easAddress);
    // Each attester's answers before and after the restart ride along, so a failure says what the service told it.
    const chain = createPublicClient({ cacheTime: 0, transport: http(second.rpcUrl) });
    for (const [i, r] of reviews.entries()) {
      const attestations = counts.get(r.attester.toLowerCase()) ?? 0;
      const details = after[i]!.body.details as Hex | undefined;
      // On a failure, what the chain holds under the answer's details (a uid, or a transaction hash).
      const held = attestations === 1 || details === undefined ? undefined : {
        attestation: await chain.readContract({ address: r.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [details] }).then((a) => a.attester, () => "error"),
        receipt: await chain.getTransactionReceipt({ hash: details }).then((x) => x.status, () => "none"),
        attesterNonce: await chain.readContract({ address: r.easAddress, abi: EAS_ABI, functionName: "getNonce", args: [r.attester as Hex] }).then(String, () => "error"),
        head: String(await chain.getBlockNumber({ cacheTime: 0 })),
        // What the second start said about the chain it found (a left-over Anvil saved, a state file set aside, ...).
        restart: second.stderrTail().split("\n").filter((line) => /anvil|state|chain|deploy|reconcil/i.test(line)).slice(-20),
      };
      const seen = { attester: r.attester, before: before[i], after: after[i], held };
      expect({ ...seen, attestations }).toEqual({ ...seen, attestations: 1 });
    }
    for (const attester of answered200) expect(counts.get(attester)).toBe(1);

    // A clean restart keeps every attestation that was answered.
    expect(await second.stop()).toBe(0);
    const third = await start();
    const kept = await attestationsByAttester(third.rpcUrl, reviews[0]!.easAddress);
    for (const r of reviews) expect(kept.get(r.attester.toLowerCase())).toBe(1);
    expect(await third.stop()).toBe(0);
  }, 120_000);
});
