/**
 * The composition root, top to bottom: the shared adapters, then each capability's wiring (one function each in
 * this folder), then HTTP. Reads nothing from the environment itself: `main.ts` reads the config and starts it.
 */
import type { Address } from "viem";
import type { Devnet } from "../adapters/devnet/mod.ts";
import { systemClock } from "../adapters/system/mod.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { wireAccounts } from "./accounts.ts";
import { type Config, withBoundPort } from "./config.ts";
import { wireDelegation } from "./delegation.ts";
import { wireDiscovery, wireWitness } from "./discovery.ts";
import { closeSigners } from "./signers.ts";
import { type Foundation, holdSqliteLock, openFoundation, type StartServiceOptions } from "./foundation.ts";
import { serveHttp } from "./http.ts";
import { listenHttp } from "./listen.ts";
import { type IndexRunner, wireArtifactTrust, wireAttestationIndex } from "./attestation_index.ts";
import { wireInteractions } from "./interactions.ts";
import { wireGauges } from "./metrics.ts";
import { wireX402, type X402Terms } from "./payments.ts";
import { writeChains } from "./write_chains.ts";
import { controllerAuthorizationOver, wireKeys } from "./keys.ts";
import { wireLimits } from "./limits.ts";
import { wireMcp } from "./mcp.ts";
import { wireOAuth } from "./oauth.ts";
import { wireSubmissions } from "./submissions.ts";
import { wireWebhooks } from "./webhooks.ts";

export { openStorage, StartupError, type StartServiceOptions } from "./foundation.ts";
export { SERVER_IDLE_TIMEOUT_SECONDS } from "./listen.ts";

/** A running service. */
export type Service = {
  readonly url: string;
  readonly port: number;
  readonly chainId: number;
  readonly chainName: string;
  readonly easAddress: Address;
  readonly trustAnchors: TrustAnchors;
  readonly devnet: Devnet | undefined;
  /** What x402 payments the service takes (decisions §13); undefined: none. */
  readonly x402: X402Terms | undefined;
  /** The attestation index of this instance: catch up now (tests, operators), and its status as the store says. */
  readonly index: Pick<IndexRunner, "catchUp" | "refresh">;
  /** SQL statements the storage ran since it opened (SQLite), for tests that count them (issue 43); else undefined. */
  readonly sqlStatements: () => number | undefined;
  /** One round of the submission reconciler now, rows of any age (tests); the rows left open. */
  readonly reconcile: () => Promise<number>;
  /**
   * Stops accepting requests, lets in-flight ones finish within `SHUTDOWN_GRACE_MS` (the rest answered and cut),
   * closes the database and the devnet.
   */
  readonly stop: () => Promise<void>;
};

/**
 * Builds adapters, use cases and HTTP from the config, and starts serving; with `holdSqliteLock`, first takes the
 * SQLite file's instance lock (a second instance on the file stops here) and releases it once stopped.
 */
export async function startService(config: Config, options: StartServiceOptions = {}): Promise<Service> {
  const lock = options.holdSqliteLock === true ? holdSqliteLock(config) : undefined;
  let service: Service;
  try {
    service = await wireService(config, options, lock !== undefined);
  } catch (error) {
    lock?.release();
    throw error;
  }
  if (lock === undefined) return service;
  return { ...service, stop: () => service.stop().finally(lock.release) };
}

async function wireService(configured: Config, options: StartServiceOptions, holdsSqliteLock: boolean): Promise<Service> {
  // PORT=0: the port is bound before anything is built, so that what names the service's own address by default
  // (PUBLIC_BASE_URL: the offers' and receipts' resourceUrl, the did:web of its keys; SIWE_DOMAINS) names the port bound.
  const listening = configured.server.port === 0 ? listenHttp(configured) : undefined;
  const config = listening === undefined ? configured : withBoundPort(configured, listening.port);
  let f: Foundation;
  try {
    f = await openFoundation(config, options);
  } catch (error) {
    listening?.stop();
    throw error;
  }
  const { devnet, log, chain, chainId, easAddress } = f;
  try {
    const discovery = wireDiscovery(config, f, options);
    const { index, attestationList, attestationQueries, attestationQueryRate, served, otherChains } = await wireAttestationIndex(config, f);
    const artifactTrust = wireArtifactTrust(f, index, discovery, undefined, controllerAuthorizationOver(config, f, discovery));
    const accounts = await wireAccounts(config, f, discovery, options);
    const indexStores = new Map([[chainId, index.store], ...otherChains.map((c) => [c.chain.chainId, c.index.store] as const)]);
    const webhooks = wireWebhooks(config, f, { indexStores, didJsonCa: options.didJsonCa });
    // Every chain's follower tells the webhook worker when it wrote outbox rows (decisions §30: events of every chain).
    for (const i of [index, ...otherChains.map((c) => c.index)]) i.onIngested(webhooks.nudge);
    const submissions = await wireSubmissions(config, f, { onSettled: webhooks.onSettled, holdsSqliteLock, reconcileClock: options.reconcileClock });
    const x402 = await wireX402(config, {
      devnet,
      chainId,
      // JWS offers are never the witness's (an Ethereum key): without X402_SIGNER or X402_JWS_KEY the devnet makes its
      // key (it was ignored: the witness's signer made EIP-712 offers, and did.json named it).
      witnessKey: f.signers.x402 ?? (config.x402.signingFormat === "jws" ? undefined : f.witnessKey),
      payments: f.storage.payments,
      clock: systemClock,
      metrics: f.metrics,
      log,
      chainClients: new Map(writeChains(config, f).list.map((w) => [w.chain.chainId, w.eas.client] as const)),
    });
    const limits = wireLimits(config, f);
    const witness = wireWitness(f, { discovery, plans: accounts.plans, limits });
    const delegation = wireDelegation(config, f, { accounts, limits });
    const keys = wireKeys(config, f, index, discovery, accounts);
    const oauth = await wireOAuth(config, f);
    const mcp = wireMcp(config, f, { served, otherChains, discovery, witness, artifactTrust, attestationList, attestationQueryRate, accounts, keys, oauth, limits, submissions });
    wireGauges(config.relays, f);
    // The embed's explorers are fetched as did.json is: the test root reaches them too.
    const interactions = wireInteractions(config, f, { didJsonCa: options.didJsonCa });
    const http = serveHttp(config, { foundation: f, listening, capabilities: { served, otherChains, discovery, witness, index, attestationList, attestationQueries, attestationQueryRate, artifactTrust, accounts, delegation, x402, oauth, keys, mcp, submissions, webhooks, interactions } });
    const url = `http://${config.server.host.includes(":") ? `[${config.server.host}]` : config.server.host}:${http.port}`;
    log.info("listening", {
      url,
      chain: chain.name,
      chainId,
      easAddress,
      schemaRegistry: devnet?.schemaRegistryAddress,
      embeddedDevnet: devnet !== undefined,
      rpc: devnet?.rpcUrl,
    });
    let stopping: Promise<void> | undefined;
    return {
      url,
      port: http.port,
      chainId,
      chainName: chain.name,
      easAddress,
      trustAnchors: f.trustAnchors,
      devnet,
      x402: x402?.terms,
      index: { catchUp: index.catchUp, refresh: index.refresh },
      sqlStatements: () => f.storage.statements?.(),
      reconcile: () => submissions.reconcile(0),
      // Every caller (a second SIGTERM included) waits for the one shutdown. Requests under way get SHUTDOWN_GRACE_MS
      // to finish (what is cut then was recorded before each step: the next start settles it); storage and the
      // devnet close only after the last connection.
      stop() {
        // A second stop (a second SIGTERM or SIGINT) ends SHUTDOWN_DELAY_MS: the drain starts at once.
        if (stopping !== undefined) http.hurry();
        stopping ??= (async () => {
          // SHUTDOWN_DELAY_MS: /readyz says 503 while the instance goes on as before (its follower, reconciler and
          // deliveries too), until the balancer has taken it out; then it stops.
          await http.quiesce();
          submissions.stop();
          accounts.stop();
          limits.stop();
          oauth?.stop();
          mcp?.stop();
          accounts.abortPremiumReads();
          // The index follower serves no request (reads go to its store and the chain): its round ends beside the drain.
          await Promise.all([http.drain(), index.stop(), webhooks.stop()]);
          await x402?.stop();
          // After the drain: no request signs any more (HSM sessions and their worker, KMS clients).
          await closeSigners(f.signers);
          await f.storage.close();
          await devnet?.stop();
        })();
        return stopping;
      },
    };
  } catch (error) {
    listening?.stop();
    await devnet?.stop();
    throw error;
  }
}
