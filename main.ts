import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Address, createPublicClient, http } from "viem";
import { type Devnet, startDevnet } from "./adapters/devnet/mod.ts";
import { EAS_ABI } from "./domain/eas_abi.ts";
import { createJsonLogger } from "./adapters/observability/mod.ts";
import { openSqliteStorage } from "./adapters/sqlite/mod.ts";
import { openPostgresStorage } from "./adapters/postgres/mod.ts";
import { systemClock } from "./adapters/system/mod.ts";
import { createViemEas } from "./adapters/chain/mod.ts";
import { createDnsPacketResolver } from "./adapters/dns/mod.ts";
import { createHttpsDidDocumentFetcher } from "./adapters/https/mod.ts";
import { createViemAttestationIndex } from "./adapters/chain/mod.ts";
import { createWebCryptoJwsVerifier } from "./client/jws_verifier.ts";
import { createArtifactTrust } from "./domain/artifact_trust/mod.ts";
import { cryptoRandom } from "./adapters/system/mod.ts";
import { createViemTxStatusReader, createViemWitnessWriter } from "./adapters/chain/mod.ts";
import { createControllerWitness } from "./domain/discovery/mod.ts";
import { createSubmissionReconciler, replayBook, witnessBook } from "./domain/delegation/mod.ts";
import type { PlanPolicy } from "./domain/accounts/mod.ts";
import { createRateLimiter } from "./domain/rate_limit.ts";
import { createSessions } from "./domain/sessions/mod.ts";
import { createCachedDiscovery, createControllerConfirm, createDiscoverControllers } from "./domain/discovery/mod.ts";
import { type Config, ConfigError, readConfig } from "./app/config.ts";
import { EAS_DOMAIN_VERSION } from "./domain/delegation/mod.ts";
import { createDelegatedAttest } from "./domain/delegation/mod.ts";
import { createReadNonce } from "./domain/delegation/mod.ts";
import { activeChainAnchors, caip2, subsidizedSchemaMap, validateTrustAnchors } from "./domain/identity/mod.ts";
import { createApp } from "./http/app.ts";
import { wireIndex } from "./app/index.ts";
import { wireX402, type X402Terms } from "./app/payments.ts";
import { withPaidPlans } from "./domain/payments/mod.ts";
import { createRelayGuard, GAS_WINDOW_MS } from "./domain/delegation/mod.ts";
import { createPremiumRpc } from "./domain/accounts/mod.ts";
import { createSubjectOwnership } from "./domain/accounts/mod.ts";
import { createSubjects } from "./domain/accounts/mod.ts";
import { createPrivateRelay, REFERENCED_AUTHORITY } from "./domain/delegation/mod.ts";
import { createViemOwnershipChain } from "./adapters/chain/mod.ts";
import { createFetchRawRpc } from "./adapters/chain/mod.ts";
import { TYPICAL_ATTEST_GAS } from "./adapters/chain/mod.ts";
import { createListAttestations } from "./domain/index/mod.ts";
import { instrumentedHandler, requestClientAddress, requestLogContext } from "./http/instrument.ts";
import { createPrometheusMetrics, meteredRpcFetch, type PrometheusMetrics } from "./adapters/observability/mod.ts";
import type { Logger } from "./ports/logger.ts";
import type { Storage } from "./ports/storage.ts";
import type { TrustAnchors } from "./ports/trust_anchors.ts";
import { loadConsoleBundle } from "./console/assets.ts";

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
  /** Stops accepting requests, lets in-flight ones finish, closes the database and the devnet. */
  readonly stop: () => Promise<void>;
};

/** Options of {@link startService} that tests set. */
export type StartServiceOptions = {
  readonly log?: Logger | undefined;
  /** Replaces `fetch` for JSON-RPC (round-trip counting in tests). */
  readonly rpcFetch?: typeof fetch | undefined;
  /** An extra trusted root for did.json fetches (tests; operators use NODE_EXTRA_CA_CERTS). */
  readonly didJsonCa?: string | undefined;
  /** How often expired challenges and sessions are pruned (default every minute; tests shorten it). */
  readonly pruneIntervalMs?: number | undefined;
};

/** A start-up problem the operator must fix; printed without a stack. */
export class StartupError extends Error {}

/** Composition root: reads nothing from the environment itself, builds adapters, use cases and HTTP. */
export async function startService(config: Config, options: StartServiceOptions = {}): Promise<Service> {
  const log = options.log ?? createJsonLogger(config.logLevel, { context: requestLogContext });
  const metrics = createPrometheusMetrics();
  describeMetrics(metrics);
  const rpcFetch = meteredRpcFetch(options.rpcFetch ?? fetch, metrics);
  const devnet: Devnet | undefined = config.rpcUrl !== undefined ? undefined : await startDevnet({
      dataDir: join(config.dataDir, "devnet"),
      persist: true,
      delegatePrivateKey: config.delegatePrivateKey,
      witnessPrivateKey: config.witnessPrivateKey,
      log: (line: string) => log.debug("devnet", { line }),
    });
  const rpcUrl: string = config.rpcUrl ?? devnet!.rpcUrl;
  const trustAnchorsPath: string = config.trustAnchorsPath ?? devnet!.trustAnchorsPath;
  const delegateKey = config.delegatePrivateKey ?? devnet?.keys.delegate;
  const witnessKey = config.witnessPrivateKey ?? devnet?.keys.witness;
  try {
    const trustAnchors = loadTrustAnchors(trustAnchorsPath);
    const probe = createPublicClient({ transport: http(rpcUrl, { retryCount: 2, timeout: 10_000 }) });
    let chainId: number;
    try {
      chainId = await probe.getChainId();
    } catch {
      throw new StartupError("RPC_URL does not answer eth_chainId");
    }
    const chain = activeChainAnchors(trustAnchors, chainId);
    if (!chain.ok) throw new StartupError(`${chain.message} (TRUST_ANCHORS_PATH)`);
    const easAddress = chain.value.easContract as Address;
    let version: string;
    try {
      version = await probe.readContract({ address: easAddress, abi: EAS_ABI, functionName: "version" });
    } catch {
      throw new StartupError(`No EAS contract answers at ${easAddress} on ${caip2(chainId)}`);
    }
    if (version !== EAS_DOMAIN_VERSION) {
      throw new StartupError(`EAS at ${easAddress} is version ${version}; delegated signatures need ${EAS_DOMAIN_VERSION}`);
    }
    const subsidized = subsidizedSchemaMap(chain.value, config.subsidizedSchemas);
    if (!subsidized.ok) throw new StartupError(`SUBSIDIZED_SCHEMAS: ${subsidized.message}`);
    // A response's authority is the owner of the review it answers; the public relay has no identity to check it against.
    const unsubsidizable = config.subsidizedSchemas.filter((name) => REFERENCED_AUTHORITY.has(name));
    if (unsubsidizable.length > 0) {
      throw new StartupError(`SUBSIDIZED_SCHEMAS: ${unsubsidizable.join(", ")} may only be written through the private relay, which checks the responder owns the subject of the attestation refUID names`);
    }
    // The private relay takes every anchored schema; the plan decides which an account may write.
    const relaySchemas = subsidizedSchemaMap(chain.value, Object.keys(chain.value.schemas));
    if (!relaySchemas.ok) throw new StartupError(`TRUST_ANCHORS_PATH: ${relaySchemas.message}`);

    const storage = await openStorage(config);
    const { replay, accounts, ledger } = storage;
    const eas = createViemEas({
      rpcUrl,
      chainId,
      easAddress,
      delegatePrivateKey: delegateKey,
      fetchFn: rpcFetch,
      log: (event, fields) => log.warn(event, fields),
      walletNonces: storage.walletNonces,
      // The devnet's state file is written after each mined transaction and before the client hears of it,
      // so nothing answered 200 is lost if the service and its Anvil are killed (decisions §15).
      onMined: devnet?.checkpoint,
    });
    const dns = createDnsPacketResolver({ servers: [...config.dnsServers] });
    const discover = createDiscoverControllers({
      dns,
      didDocuments: createHttpsDidDocumentFetcher({
        resolver: dns,
        allowPrivateNetwork: config.allowPrivateNetwork,
        ca: options.didJsonCa,
      }),
      serviceDnsLabel: config.serviceDnsLabel,
      // One budget per registrable domain for every caller, so nobody can hammer a domain through us.
      domainRate: createRateLimiter(systemClock, {
        capacity: config.discoveryDomainPerMinute,
        perMinute: config.discoveryDomainPerMinute,
      }),
    });
    // The read-only views and artifact trust share answers for DISCOVERY_CACHE_SECONDS; the witness always
    // looks afresh.
    const viewDiscover = config.discoveryCacheSeconds === 0 ? discover : createCachedDiscovery(discover, { clock: systemClock }, {
      freshMs: config.discoveryCacheSeconds * 1_000,
      failureMs: Math.ceil(config.discoveryCacheSeconds * 1_000 / 6),
    });
    const controllerConfirm = createControllerConfirm({
      discover: viewDiscover,
      trustAnchors,
      clock: systemClock,
      registryUrl: `${config.publicBaseUrl.replace(/\/$/, "")}/v1/trust-anchors`,
    });
    // Logs before the EAS deployment cannot hold attestations.
    const startBlock = config.startBlock ?? devnet?.deployBlock ?? 0n;
    const chainReads = createViemAttestationIndex({
      rpcUrl,
      chainId,
      easAddress,
      startBlock,
      timeoutMs: config.artifactTrustRpcTimeoutMs,
      fetchFn: rpcFetch,
      log: (event, fields) => log.warn(event, fields),
    });
    const indexStore = await storage.indexStore({ chainId, easAddress });
    const index = wireIndex({
      store: indexStore,
      chain: chainReads,
      live: chainReads,
      settings: {
        startBlock,
        // The devnet mines on demand and never reorganizes by itself: nothing to wait for.
        confirmations: config.index.confirmations ?? (devnet === undefined ? 12 : 0),
        pollMs: config.index.pollMs,
        stallSeconds: config.index.stallSeconds,
        leaseSeconds: config.index.leaseSeconds,
        stepBlocks: BigInt(config.index.stepBlocks),
        follow: config.index.follow,
      },
      clock: systemClock,
      log,
      metrics,
    });
    const attestationList = createListAttestations({
      reads: chainReads,
      store: indexStore,
      schemaUids: chain.value.schemas,
      startBlock,
    });
    const artifactTrust = createArtifactTrust({
      index: index.reads,
      trustAnchors,
      clock: systemClock,
      jws: createWebCryptoJwsVerifier(),
      discover: viewDiscover,
    });
    await accounts.prune(systemClock.nowMs());
    // Expired challenges and sessions go every minute as well, not only at start (decisions §15).
    const pruneTimer = setInterval(() => {
      accounts.prune(systemClock.nowMs()).catch((error) =>
        log.warn("prune_failed", { error: error instanceof Error ? error.message : String(error) }));
    }, options.pruneIntervalMs ?? 60_000);
    pruneTimer.unref?.();
    const plans: PlanPolicy = {
      free: { annualWrites: config.freePlanAnnualWrites, schemas: config.freePlanSchemas },
      paid: { annualWrites: config.paidPlanAnnualWrites, schemas: config.paidPlanSchemas },
    };
    const witnessSchemaUid = chain.value.schemas["controller-witness"] as `0x${string}` | undefined;
    if (witnessKey !== undefined) eas.senderFor(witnessKey);
    const reconcile = createSubmissionReconciler({
      books: [replayBook(replay, eas.reader), witnessBook(ledger, systemClock)],
      txStatus: createViemTxStatusReader({
        client: eas.client,
        easAddress,
        log: (event, fields) => log.warn(event, fields),
        senderOf: eas.senderOf,
      }),
      clock: systemClock,
      graceMs: RECONCILE_GRACE_MS,
      lostAfterMs: HASH_ONLY_LOST_AFTER_MS,
      replacements: storage.txReplacements,
      bumpAfterMs: config.feeBump.afterSeconds === 0 ? undefined : config.feeBump.afterSeconds * 1000,
      maxBumps: config.feeBump.max,
    });
    const settle = async (graceMs?: number): Promise<number> => {
      try {
        const report = await reconcile({ graceMs });
        if (report.mined + report.reverted + report.released + report.rebroadcast + report.bumped > 0) log.info("submissions_reconciled", report);
        return report.open;
      } catch (error) {
        log.warn("reconcile_failed", { error: error instanceof Error ? error.message : String(error) });
        return -1;
      }
    };
    // Submissions a crash left open are settled before the first request. A SQLite file has no other
    // instance, so every open row is from before this start; on PostgreSQL other instances may be mid-flight.
    // A row left open by a passing failure (the node restarting, an answer lost) gets a few more rounds first;
    // one truly pending on chain stays for the periodic rounds.
    const startupGrace = storage.kind === "sqlite" ? 0 : undefined;
    for (let round = 0; round < 4 && (await settle(startupGrace)) !== 0; round++) await Bun.sleep(250);
    const settleTimer = setInterval(() => void settle(), 60_000);
    settleTimer.unref?.();
    const sessions = withPaidPlans(createSessions({
      accounts,
      clock: systemClock,
      random: cryptoRandom,
      policy: {
        sessionTtlHours: config.sessionTtlHours,
        challengeTtlMinutes: 10,
        siweDomains: config.siweDomains,
        challengeRatePerMinute: config.siweChallengePerMinute,
      },
      contractWallets: eas.reader.checkContractSignature === undefined
        ? undefined
        : { chainId: eas.reader.chainId, check: eas.reader.checkContractSignature },
    }), { payments: storage.payments, clock: systemClock });
    const x402 = await wireX402(config, {
      devnet,
      chainId,
      witnessKey,
      payments: storage.payments,
      clock: systemClock,
      metrics,
      log,
      chainClient: eas.client,
    });
    const witness = createControllerWitness({
      discover,
      ledger,
      writer: witnessKey === undefined ? undefined : createViemWitnessWriter({
        client: eas.client,
        sender: eas.senderFor(witnessKey),
        easAddress,
        log: (event, fields) => log.warn(event, fields),
      }),
      witnessSchemaUid,
      chainId,
      plans,
      clock: systemClock,
      random: cryptoRandom,
      userRate: createRateLimiter(systemClock, { capacity: config.witnessUserPerMinute, perMinute: config.witnessUserPerMinute }),
      domainRate: createRateLimiter(systemClock, { capacity: config.witnessDomainPerMinute, perMinute: config.witnessDomainPerMinute }),
    });
    const wallets = [
      ...(eas.delegate ? [{ wallet: "delegate", address: eas.delegate.address }] : []),
      ...(witnessKey ? [{ wallet: "witness", address: eas.senderFor(witnessKey).address }] : []),
    ];
    /** The delegate's balance, undefined without a delegate, -1n when the chain does not answer. */
    const delegateBalance = async (): Promise<bigint | undefined> => {
      if (!eas.delegate) return undefined;
      try {
        return await eas.client.getBalance({ address: eas.delegate.address });
      } catch {
        return -1n;
      }
    };
    metrics.gauge("ats_wallet_balance_wei", "Balance of the service's wallets", () =>
      Promise.all(wallets.map(async (w) => ({ labels: { wallet: w.wallet }, value: await eas.client.getBalance({ address: w.address }) }))));
    metrics.gauge("ats_wallet_pending_transactions", "Transactions of the service's wallets sent but not yet mined", () =>
      Promise.all(wallets.map(async (w) => {
        const [pending, latest] = await Promise.all([
          eas.client.getTransactionCount({ address: w.address, blockTag: "pending" }),
          eas.client.getTransactionCount({ address: w.address, blockTag: "latest" }),
        ]);
        return { labels: { wallet: w.wallet }, value: pending - latest };
      })));
    const gasWindow = () => systemClock.nowMs() - (systemClock.nowMs() % GAS_WINDOW_MS);
    metrics.gauge("ats_public_relay_gas_used", "Gas the public relay charged this hour, all instances", async () =>
      [{ value: await storage.gasBudget.used(gasWindow()) }]);
    metrics.gauge("ats_public_relay_gas_budget_left", "Gas left in the public relay's budget this hour, all instances", async () => {
      const left = config.publicRelay.gasPerHour - await storage.gasBudget.used(gasWindow());
      return [{ value: left > 0n ? left : 0n }];
    });
    metrics.gauge("ats_private_relay_gas_used", "Gas the private relay charged this hour, all instances", async () =>
      [{ value: await storage.privateGasBudget.used(gasWindow()) }]);
    metrics.gauge("ats_delegated_submissions_open", "Delegated attestations checked, signed or sent but not yet mined or released, all instances", async () =>
      [{ value: (await replay.open(Number.MAX_SAFE_INTEGER)).length }]);
    metrics.gauge("ats_sponsored_writes_unsettled", "Sponsored writes reserved against a quota but not yet committed or released, all instances", async () =>
      [{ value: (await ledger.unsettled(Number.MAX_SAFE_INTEGER)).length }]);
    const subjectOwnership = createSubjectOwnership({
      discover: viewDiscover,
      chain: createViemOwnershipChain({ client: eas.client, chainId, log: (event, fields) => log.warn(event, fields) }),
    });
    const subjects = createSubjects({ store: storage.subjects, ownership: subjectOwnership, clock: systemClock, random: cryptoRandom, chainId });
    const publicOrigin = new URL(config.publicBaseUrl).origin;
    // Aborted first thing at shutdown: a premium read still waiting on a slow node ends then (a read spent, 502),
    // so stopping never waits on it (issue 23).
    const premiumStop = new AbortController();
    const app = createApp({
      session: {
        sessions,
        witness,
        ledger,
        plans,
        clock: systemClock,
        secureCookies: !isLoopbackHost(new URL(config.publicBaseUrl).hostname),
        metrics,
        clientAddress: requestClientAddress,
        chainId,
        primarySubject: (account) => subjects.primary(account),
        payments: x402?.gate,
      },
      subjects: { sessions, subjects },
      privateRelay: {
        sessions,
        readNonce: createReadNonce(eas.reader),
        chainName: chain.value.name,
        chainId,
        easAddress,
        payments: x402?.gate,
        relay: createPrivateRelay({
          attest: createDelegatedAttest({
            clock: systemClock,
            eas: eas.reader,
            delegate: eas.delegate,
            replay,
            mainnet: config.activeChain === "mainnet",
            subsidized: relaySchemas.value,
            maxGasPerTx: BigInt(config.privateRelay.maxGasPerTx),
            factoryCalls: storage.factoryCalls,
            // Issue 23: the private relay's hourly gas budget, checked before any RPC and charged like the public one's.
            guard: createRelayGuard({
              enabled: true,
              relay: "private",
              gasBudget: storage.privateGasBudget,
              gasPerHour: config.privateRelay.gasPerHour,
              typicalGas: TYPICAL_ATTEST_GAS,
              clock: systemClock,
              onRefusal: (reason) => metrics.increment("ats_private_relay_refusals_total", { reason }),
            }),
          }),
          ledger,
          plans,
          subjects: storage.subjects,
          clock: systemClock,
          random: cryptoRandom,
          schemaNames: new Map([...relaySchemas.value].map(([uid, s]) => [uid, s.name])),
          subjectScoped: new Set(config.privateRelay.subjectScoped),
          chainId,
          readAttestation: eas.reader.getAttestation,
          verifyOwnership: subjectOwnership,
        }),
      },
      accounts: {
        primarySubject: (account) => subjects.primary(account),
        sessions,
        accounts,
        ledger,
        plans,
        clock: systemClock,
        chainId,
        premiumReads: { ledger: storage.premiumReads, limits: { free: config.premiumReads.free, paid: config.premiumReads.paid } },
        paidPeriod: (accountId, nowMs) => storage.payments.paidPeriod(accountId, nowMs),
      },
      subscriptions: x402 === undefined ? undefined : {
        sessions,
        gate: x402.gate,
        payments: storage.payments,
        ledger,
        plans,
        clock: systemClock,
      },
      subjectOwnership,
      premiumRpc: {
        sessions,
        premiumRpc: createPremiumRpc({
          ledger: storage.premiumReads,
          rpc: createFetchRawRpc({ rpcUrl, fetchFn: rpcFetch, timeoutMs: config.premiumRpc.timeoutMs, signal: premiumStop.signal }),
          clock: systemClock,
          limits: { free: config.premiumReads.free, paid: config.premiumReads.paid },
          maxLogRange: BigInt(config.premiumReads.maxLogRange),
          maxCallGas: BigInt(config.premiumRpc.maxCallGas),
          maxInFlightPerAccount: config.premiumRpc.maxInFlightPerAccount,
          maxInFlight: config.premiumRpc.maxInFlight,
        }),
      },
      metricsText: () => metrics.render(),
      console: { bundle: loadConsoleBundle, settings: { chainId, chainName: chain.value.name, serviceDnsLabel: config.serviceDnsLabel } },
      privateOrigins: [...new Set([publicOrigin, ...config.corsOrigins])],
      controller: { discover: viewDiscover, confirm: controllerConfirm },
      artifactTrust,
      attestationList,
      readNonce: createReadNonce(eas.reader),
      delegatedAttest: createDelegatedAttest({
        clock: systemClock,
        eas: eas.reader,
        delegate: eas.delegate,
        replay,
        mainnet: config.activeChain === "mainnet",
        subsidized: subsidized.value,
        factoryCalls: storage.factoryCalls,
        guard: createRelayGuard({
          enabled: config.publicRelay.enabled,
          clientRate: createRateLimiter(systemClock, { capacity: config.publicRelay.ipPerMinute, perMinute: config.publicRelay.ipPerMinute }),
          attesterRate: createRateLimiter(systemClock, {
            capacity: config.publicRelay.attesterPerHour,
            perMinute: config.publicRelay.attesterPerHour / 60,
          }),
          gasBudget: storage.gasBudget,
          gasPerHour: config.publicRelay.gasPerHour,
          typicalGas: TYPICAL_ATTEST_GAS,
          clock: systemClock,
          onRefusal: (reason) => metrics.increment("ats_public_relay_refusals_total", { reason }),
        }),
      }),
      clientAddress: requestClientAddress,
      chainName: chain.value.name,
      chainId,
      easAddress,
      trustAnchors,
      log,
      publicBaseUrl: config.publicBaseUrl,
      ready: async () => {
        const [database, rpc, balance] = await Promise.all([storage.ping(), eas.ping(), delegateBalance()]);
        const delegateFunded = balance === undefined ? undefined : balance >= config.minDelegateBalanceWei;
        const { follower: _, ...indexStatus } = index.status();
        return {
          ready: database && rpc && delegateFunded !== false && index.healthy(),
          checks: {
            database,
            trustAnchors: true,
            rpc,
            ...(delegateFunded === undefined ? {} : { delegateBalance: delegateFunded }),
            index: index.healthy(),
          },
          index: indexStatus,
        };
      },
    });
    const server = Bun.serve({
      hostname: config.host,
      port: config.port,
      // Above the app's own limit (http/routes/request.ts MAX_BODY_BYTES, 8 MiB), so that an oversized body
      // gets the app's 413 PAYLOAD_TOO_LARGE with CORS and the error body rather than Bun's bare 413.
      maxRequestBodySize: 16 * 1024 * 1024,
      // Bun's default (10 s) cut connections whose answer was still coming (a hanging RPC behind artifact trust,
      // a receipt awaited for up to two minutes): every route answers before this, at the latest at the handler's
      // ROUTE_DEADLINE_MS (http/instrument.ts), 10 s earlier.
      idleTimeout: SERVER_IDLE_TIMEOUT_SECONDS,
      fetch: instrumentedHandler(app as never, { metrics, log, trustProxy: config.trustProxy }),
    });
    const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${server.port}`;
    log.info("listening", {
      url,
      chain: chain.value.name,
      chainId,
      easAddress,
      schemaRegistry: devnet?.schemaRegistryAddress,
      embeddedDevnet: devnet !== undefined,
      rpc: devnet?.rpcUrl,
    });
    let stopping: Promise<void> | undefined;
    return {
      url,
      port: server.port ?? config.port,
      chainId,
      chainName: chain.value.name,
      easAddress,
      trustAnchors,
      devnet,
      x402: x402?.terms,
      // Every caller (a second SIGTERM included) waits for the one shutdown, so nothing exits while
      // submissions are still in flight.
      stop() {
        stopping ??= (async () => {
          clearInterval(settleTimer);
          clearInterval(pruneTimer);
          premiumStop.abort();
          await server.stop(false);
          await index.stop();
          await x402?.stop();
          await storage.close();
          await devnet?.stop();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await devnet?.stop();
    throw error;
  }
}

/** Types and help texts of the service's metrics. */
function describeMetrics(metrics: PrometheusMetrics) {
  metrics.describe("ats_http_requests_total", "counter", "HTTP requests by route, method and status");
  metrics.describe("ats_http_request_duration_seconds", "histogram", "HTTP request latency by route and status");
  metrics.describe("ats_rpc_calls_total", "counter", "JSON-RPC calls by method");
  metrics.describe("ats_rpc_failures_total", "counter", "JSON-RPC failures: round trips (network, timeout, http_<status>) and error answers (rpc_error by code and method)");
  metrics.describe("ats_rpc_round_trip_seconds", "histogram", "JSON-RPC HTTP round-trip time");
  metrics.describe("ats_public_relay_refusals_total", "counter", "Public delegated-attest requests the relay guard refused, by reason: client, attester, budget, disabled");
  metrics.describe("ats_private_relay_refusals_total", "counter", "Private-relay delegated attestations refused by its hourly gas budget (reason budget)");
  metrics.describe("ats_x402_payments_total", "counter", "x402 payments by purpose (witness, relay, plan) and outcome: settled, settle_failed, work_failed, work_unknown, replayed, in_progress");
  metrics.describe("ats_x402_settlement_failures_total", "counter", "x402 payments whose settlement failed after the work succeeded (see ops payments list), by purpose");
  metrics.describe("ats_sponsored_writes_total", "counter", "Controller witness requests (sponsored-write quota use) by outcome: committed or the error code, e.g. sponsored_write_limit_exceeded");
}

/**
 * How long the server keeps a connection whose answer has not come yet: Bun's maximum. The bounded lookups of the
 * default settings stay well below it: artifact trust makes at most seven dependent lookups of
 * 3 × ARTIFACT_TRUST_RPC_TIMEOUT_MS (8 s) plus backoff, about 170 s; a nonce read one RPC exchange of 10 s with one
 * retry; a discovery about 6 s. What can take longer (a submission: up to eight such exchanges and a receipt awaited
 * for 120 s; a scan over a slow node) is answered at ROUTE_DEADLINE_MS (http/instrument.ts, 245 s).
 */
export const SERVER_IDLE_TIMEOUT_SECONDS = 255;

/** PostgreSQL when `DATABASE_URL` is set (several instances), else the SQLite file. */
export async function openStorage(config: Config): Promise<Storage> {
  if (config.databaseUrl === undefined) return openSqliteStorage(config.databasePath);
  try {
    return await openPostgresStorage(config.databaseUrl);
  } catch {
    throw new StartupError("DATABASE_URL: cannot connect to PostgreSQL or apply the schema");
  }
}

/**
 * Open submissions younger than this belong to requests still in flight (a receipt is awaited for at most
 * two minutes) and are left to them by the periodic reconciler.
 */
const RECONCILE_GRACE_MS = 5 * 60_000;

/** A write stored before its transaction's bytes were (hash only) and unknown to the node is given back after this. */
const HASH_ONLY_LOST_AFTER_MS = 10 * 60_000;

/** Cookies go without `Secure` only when the service is reached on loopback (development). */
function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]" || hostname === "::1";
}

function loadTrustAnchors(path: string): TrustAnchors {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw new StartupError(`TRUST_ANCHORS_PATH: cannot read JSON from ${path}`);
  }
  const anchors = validateTrustAnchors(raw);
  if (!anchors.ok) throw new StartupError(`TRUST_ANCHORS_PATH: ${anchors.message}`);
  return anchors.value;
}

if (import.meta.main) {
  let service: Service;
  try {
    service = await startService(readConfig(process.env));
  } catch (error) {
    if (error instanceof ConfigError || error instanceof StartupError) {
      console.error(`ats: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  const lines = [
    `ats listening on ${service.url}`,
    `chain ${service.chainName} (eip155:${service.chainId})`,
    `EAS ${service.easAddress}`,
  ];
  if (service.devnet) {
    lines.push(`SchemaRegistry ${service.devnet.schemaRegistryAddress}`, `devnet RPC ${service.devnet.rpcUrl}`);
  }
  if (service.x402) {
    const { x402 } = service;
    const price = (value: string | null) => value ?? "not offered";
    lines.push(
      `x402 token ${x402.asset} on ${x402.network}${service.devnet ? ` (${service.devnet.x402.name}, ${service.devnet.x402.decimals} decimals, minted to the Anvil dev accounts)` : ""}`,
      `x402 payTo ${x402.payTo}, facilitator ${x402.facilitatorUrl}`,
      `x402 prices (token units): witness ${price(x402.prices.witness)}, relay ${price(x402.prices.relay)}, paid plan year ${price(x402.prices.paidPlan)}`,
    );
  }
  // The handlers come first: whoever waits for the banner may stop the service right after reading it.
  const shutdown = async () => {
    await service.stop();
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  console.log(lines.join("\n"));
}
