/**
 * The shared adapters every capability's wiring takes: logs and metrics, the chain (the embedded devnet unless
 * `RPC_URL` names one), the trust anchors checked against that chain, the storage, and the EAS client.
 */
import { mkdirSync, readFileSync } from "node:fs";
import type { WrittenAttestation } from "../ports/attestation_index.ts";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import { type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { type ChainGateState, createHttp1Post, createViemEas, type Http1Post, http1Serves, type ViemEas } from "../adapters/chain/mod.ts";
import { loadSecp256k1, openKeccak256 } from "../adapters/crypto/mod.ts";
import type { Keccak256 } from "../ports/keccak.ts";
import type { Secp256k1 } from "../ports/secp256k1.ts";
import { createJsonLogger, createPrometheusMetrics, meteredRpcFetch, type PrometheusMetrics } from "../adapters/observability/mod.ts";
import { ClockSkewError, openPostgresStorage } from "../adapters/postgres/mod.ts";
import { lockSqliteFile, openSqliteStorage, type SqliteInstanceLock } from "../adapters/sqlite/mod.ts";
import { REFERENCED_AUTHORITY } from "../domain/delegation/mod.ts";
import { activeChainAnchors, subsidizedSchemaMap, validateTrustAnchors } from "../domain/identity/mod.ts";
import { requestLogContext } from "../http/instrument.ts";
import type { Logger } from "../ports/logger.ts";
import type { Storage } from "../ports/storage.ts";
import type { ChainAnchors, TrustAnchors } from "../ports/trust_anchors.ts";
import { attestationChains, type ChainsConfig, type Config, defaultChain } from "./config.ts";
import { checkChains, createChainGates } from "./chain_checks.ts";
import { StartupError } from "./startup_error.ts";
import { describeMetrics } from "./metrics.ts";
import { checkChainDelegates, checkDelegatePresent, checkRawKeys, closeSigners, delegateOn, openServiceSigners, type ServiceSigners } from "./signers.ts";
import { SignerStartError } from "../adapters/signers/mod.ts";
import type { EthereumSigner } from "../ports/signer.ts";

/** Schema UIDs (lowercase) a relay writes, with their names. */
export type SchemaMap = ReadonlyMap<string, { readonly name: string; readonly revocable?: boolean | undefined }>;

export { StartupError } from "./startup_error.ts";

/** Options of the service that tests set. */
export type StartServiceOptions = {
  readonly log?: Logger | undefined;
  /** Replaces `fetch` for JSON-RPC (round-trip counting in tests). */
  readonly rpcFetch?: typeof fetch | undefined;
  /** An extra trusted root for did.json fetches (tests; operators use NODE_EXTRA_CA_CERTS). */
  readonly didJsonCa?: string | undefined;
  /** How often expired challenges and sessions are pruned (default every minute; tests shorten it). */
  readonly pruneIntervalMs?: number | undefined;
  /**
   * How long a sync send waits for the node's answer before asking about the hash (default 100 ms): fault tests whose
   * node always answers set it long, so that the outcome never depends on the machine's speed.
   */
  readonly sendSyncGraceMs?: number | undefined;
  /**
   * The clock a wallet's kept fees age by (default `Date.now`): a test that counts JSON-RPC calls per write moves it by
   * hand, so how often the fees are read again never depends on the machine's speed.
   */
  readonly feeClock?: (() => number) | undefined;
  /**
   * The clock the submission reconciler reads (default the system's): a test moves it by hand to read a transaction's
   * nonce taken twice, `REPLACED_CONFIRM_MS` apart, without waiting five minutes.
   */
  readonly reconcileClock?: { readonly nowMs: () => number } | undefined;
  /**
   * Hold the SQLite file's instance lock while the service runs ({@link holdSqliteLock}); main.ts, the service process,
   * sets it. Tests that run several services on one file in one process leave it off, and the operator's commands
   * (`ats ops`) open the file without it while the service runs.
   */
  readonly holdSqliteLock?: boolean | undefined;
};

/** What every capability's wiring shares. */
export type Foundation = {
  readonly log: Logger;
  readonly metrics: PrometheusMetrics;
  /** `fetch` for JSON-RPC, metered. */
  readonly rpcFetch: typeof fetch;
  /**
   * The delegated-attestation path's POST over kept-alive sockets for a node at `url` (issue 43 item 4), when the URL
   * is plain http, no proxy is set and no `rpcFetch` was given (tests that count or break the exchanges give one);
   * else undefined, and that path sends with fetch. Its caller meters the calls itself.
   */
  readonly rpcPost: (url: string) => Http1Post | undefined;
  /**
   * Each served chain's gate state now (app/chain_checks.ts), by CAIP-2 id: `unchecked` while its node has not answered
   * its chain id (at start, or since a failed exchange), `checked`, or `wrong` (decisions §30; `/readyz`'s `nodes`).
   */
  readonly heldChains: () => ReadonlyMap<string, ChainGateState>;
  readonly devnet: Devnet | undefined;
  readonly rpcUrl: string;
  readonly chainId: number;
  /** The active chain's anchors: its name, EAS address and schemas. */
  readonly chain: ChainAnchors;
  readonly easAddress: Address;
  readonly trustAnchors: TrustAnchors;
  /** The schemas the public relay subsidizes (`SUBSIDIZED_SCHEMAS`). */
  readonly subsidized: SchemaMap;
  /** Every anchored schema: the private relay takes them all and the plan decides which an account may write. */
  readonly relaySchemas: SchemaMap;
  /** The first block that can hold attestations (logs before the EAS deployment cannot). */
  readonly startBlock: bigint;
  /** The witness wallet's signer (decisions §27), or its raw key in tests. */
  readonly witnessKey: Hex | EthereumSigner | undefined;
  /** Every role's signer (decisions §27). */
  readonly signers: ServiceSigners;
  readonly storage: Storage;
  readonly eas: ViemEas;
  /** Signer recovery and transaction signatures: libsecp256k1 when the machine has it (issue 28). */
  readonly secp256k1: Secp256k1;
  /** keccak-256 in WebAssembly (issue 28). */
  readonly keccak256: Keccak256;
  /**
   * Run after a transaction of this instance is mined on a chain, before its caller hears of it: that chain's index is
   * told (decisions §21, §30), by chain id; each index's wiring sets its chain's.
   */
  readonly afterMined: Map<number, (blockNumber: bigint) => Promise<void>>;
  /** Told each attestation this instance wrote and saw mined on a chain: that chain's index (issue 43 item 5), by chain id. */
  readonly afterAttested: Map<number, (written: WrittenAttestation) => void>;
};

/** The schemas the public relay pays for (`SUBSIDIZED_SCHEMAS`) and every anchored one the relays write, checked. */
function relaySchemasOf(config: Config, chain: Parameters<typeof subsidizedSchemaMap>[0]) {
  const subsidized = subsidizedSchemaMap(chain, config.relays.subsidizedSchemas);
  if (!subsidized.ok) throw new StartupError(`SUBSIDIZED_SCHEMAS: ${subsidized.message}`);
  // A response's authority is the owner of the review it answers; the public relay has no identity to check it against.
  const unsubsidizable = config.relays.subsidizedSchemas.filter((name) => REFERENCED_AUTHORITY.has(name));
  if (unsubsidizable.length > 0) {
    throw new StartupError(`SUBSIDIZED_SCHEMAS: ${unsubsidizable.join(", ")} may only be written through the private relay, which checks the responder owns the subject of the attestation refUID names`);
  }
  const relaySchemas = subsidizedSchemaMap(chain, Object.keys(chain.schemas));
  if (!relaySchemas.ok) throw new StartupError(`TRUST_ANCHORS_PATH: ${relaySchemas.message}`);
  return { subsidized: subsidized.value, relaySchemas: relaySchemas.value };
}

/** Opens the shared adapters; on a failure, whatever was started is stopped again. */
export async function openFoundation(config: Config, options: StartServiceOptions): Promise<Foundation> {
  const log = options.log ?? createJsonLogger(config.server.logLevel, { context: requestLogContext });
  const metrics = createPrometheusMetrics();
  describeMetrics(metrics);
  // Every chain's JSON-RPC behind its gate (app/chain_checks.ts): a chain whose node did not answer at start waits for its
  // check, and a served chain's failed exchange has its node's chain id checked again before the next.
  const gates = createChainGates(
    meteredRpcFetch(options.rpcFetch ?? fetch, metrics),
    (url) => (options.rpcFetch === undefined && http1Serves(url) ? createHttp1Post(url) : undefined),
    options.rpcFetch ?? fetch,
  );
  const { rpcFetch, rpcPost } = gates;
  const keccak256 = await openKeccak256();
  const secp = loadSecp256k1(config.signers.secp256k1Library, keccak256);
  if (!secp.ok) throw new StartupError(secp.error);
  const secp256k1 = secp.value;
  log.info("crypto", { secp256k1: secp256k1.implementation, keccak256: keccak256.implementation });
  const signerDeps = { log, metrics, secp256k1, keccak256 };
  // A wrong signer URI stops the start before anything is started (one line naming the role, decisions §27).
  let configured: ServiceSigners;
  try {
    configured = await openServiceSigners(config, signerDeps);
  } catch (error) {
    if (error instanceof SignerStartError) throw new StartupError(error.message);
    throw error;
  }
  const served = defaultChain(config.chains);
  const devnet = served.rpcUrl !== undefined ? undefined : await startEmbeddedDevnet(config, configured, log).catch(async (error) => {
    await closeSigners(configured);
    throw error;
  });
  let signers = configured;
  try {
    // The devnet's second chain (DEVNET_CHAINS=2) may be the default one: its own node, not the first chain's.
    const rpcUrl: string = served.rpcUrl ?? devnet!.chains.find((c) => c.chainId === served.chainId)?.rpcUrl ?? devnet!.rpcUrl;
    const trustAnchors = loadTrustAnchors(config.chains.trustAnchorsPath ?? devnet!.trustAnchorsPath);
    checkAnchoredChains(config.chains, trustAnchors);
    const { chainId, chain } = await checkChains(config.chains, { rpcUrl, trustAnchors, devnet, log, gates });
    // The embedded devnet's own keys sign for the roles the config leaves without one.
    if (devnet !== undefined && (signers.delegate === undefined || signers.witness === undefined)) {
      // Opened again with them (once per start, on the devnet): the first sessions are closed, not left open.
      await closeSigners(signers);
      signers = await openServiceSigners(config, signerDeps, { delegate: devnet.keys.delegate, witness: devnet.keys.witness });
    }
    try {
      // Every attestation chain the signers sign on (RPC_URL's one chain is known by the node's answer).
      const signing = { chainIds: attestationChains(config.chains).map((c) => c.chainId ?? chainId), embeddedDevnet: devnet !== undefined };
      checkDelegatePresent(signers, signing);
      checkChainDelegates(config.signers, signers, signing);
      checkRawKeys(config, signers, signing, { log, metrics });
    } catch (error) {
      if (error instanceof SignerStartError) throw new StartupError(error.message);
      throw error;
    }
    const { subsidized, relaySchemas } = relaySchemasOf(config, chain);
    const storage = await openStorage(config);
    const afterMined: Foundation["afterMined"] = new Map();
    const afterAttested: Foundation["afterAttested"] = new Map();
    const eas = createViemEas({
      rpcUrl,
      chainId,
      easAddress: chain.easContract as Address,
      // The chain's own delegate when it names one: one client per chain, so one sender per wallet (app/write_chains.ts).
      delegateSigner: delegateOn(signers, chainId),
      // The default chain's delegate keeps MIN_DELEGATE_BALANCE_WEI (what /readyz shows): under it a write is refused 503
      // before anything is recorded. /readyz no longer counts it in `ready`, so this, not the balancer, stops the writes.
      delegateReserveWei: config.signers.minDelegateBalanceWei,
      fetchFn: rpcFetch,
      // The delegated-attestation path meters its own calls (issue 28): no second parse of every request and response.
      rpcMetrics: metrics,
      unmeteredFetchFn: gates.unmeteredRpcFetch,
      post: rpcPost(rpcUrl),
      log: (event, fields) => log.warn(event, fields),
      walletNonces: storage.walletNonces,
      secp256k1,
      keccak256,
      sendSync: config.chains.rpcSendSync,
      sendSyncGraceMs: options.sendSyncGraceMs,
      feeClock: options.feeClock,
      // The devnet's state file is written after each mined transaction and before the client hears of it,
      // so nothing answered 200 is lost if the service and its Anvil are killed (decisions §15). Then the index
      // follower is told, so the writer's next read polls for the write first and sees it (decisions §21, issue 43).
      onMined: async (blockNumber) => {
        await devnet?.checkpoint?.();
        await afterMined.get(chainId)?.(blockNumber);
      },
      onAttested: (written) => afterAttested.get(chainId)?.(written),
    });
    const witnessKey = signers.witness;
    if (witnessKey !== undefined) eas.senderFor(witnessKey);
    return {
      log,
      metrics,
      rpcFetch,
      rpcPost,
      heldChains: gates.held,
      devnet,
      rpcUrl,
      chainId,
      chain,
      easAddress: chain.easContract as Address,
      trustAnchors,
      subsidized,
      relaySchemas,
      startBlock: served.startBlock ?? devnet?.deployBlock ?? 0n,
      witnessKey,
      signers,
      storage,
      eas,
      secp256k1,
      keccak256,
      afterMined,
      afterAttested,
    };
  } catch (error) {
    await closeSigners(signers);
    await devnet?.stop();
    throw error;
  }
}

/** Every attestation chain served must be one the trust anchors describe (decisions §30): else one line naming it. */
export function checkAnchoredChains(chains: ChainsConfig, trustAnchors: TrustAnchors): void {
  for (const chain of attestationChains(chains)) {
    if (chain.chainId === undefined || activeChainAnchors(trustAnchors, chain.chainId).ok) continue;
    throw new StartupError(`CHAINS_FILE: ${chain.caip2} is an attestation chain the trust anchors do not describe (TRUST_ANCHORS_PATH)`);
  }
}

/**
 * The embedded devnet in `DATA_DIR/devnet`. `DATA_DIR` is made first, its owner's alone: the database in it holds
 * secrets, and the devnet's files made it with the umask's mode before the SQLite file's own 0700 folder could apply.
 */
function startEmbeddedDevnet(config: Config, configured: ServiceSigners, log: Logger): Promise<Devnet> {
  mkdirSync(config.storage.dataDir, { recursive: true, mode: 0o700 });
  return startDevnet({
    dataDir: join(config.storage.dataDir, "devnet"),
    chains: config.chains.devnetChains,
    persist: true,
    delegatePrivateKey: config.signers.delegatePrivateKey,
    witnessPrivateKey: config.signers.witnessPrivateKey,
    // Keys outside the process: the devnet funds their addresses and trusts the witness's.
    delegateAddress: configured.delegate?.address,
    witnessAddress: configured.witness?.address,
    log: (line: string) => log.debug("devnet", { line }),
  });
}

/** PostgreSQL when `DATABASE_URL` is set (several instances), else the SQLite file. */
/**
 * The anchors as the service serves them (decisions §29): their `widgetOrigins` led by the service's own origin and
 * `WIDGET_ORIGINS`, each origin once; the route and the MCP tool answer the same document.
 */
export function servedTrustAnchors(config: Pick<Config, "server" | "widgets">, anchors: TrustAnchors): TrustAnchors {
  const origins = [new URL(config.server.publicBaseUrl).origin, ...config.widgets.widgetOrigins];
  return { ...anchors, widgetOrigins: [...new Set([...origins, ...anchors.widgetOrigins])] };
}

export async function openStorage(config: Pick<Config, "storage">): Promise<Storage> {
  if (config.storage.databaseUrl === undefined) return openSqliteStorage(config.storage.databasePath);
  try {
    return await openPostgresStorage(config.storage.databaseUrl, { walletLockSeconds: config.storage.walletLockSeconds });
  } catch (error) {
    if (error instanceof ClockSkewError) throw new StartupError(`DATABASE_URL: ${error.message}`);
    // The server's SQLSTATE (40P01 a deadlock, 28P01 a password refused, …) says which, without its message's text.
    const state = (error as { errno?: unknown } | null)?.errno;
    const detail = typeof state === "string" && /^[0-9A-Z]{5}$/.test(state) ? ` (SQLSTATE ${state})` : "";
    throw new StartupError(`DATABASE_URL: cannot connect to PostgreSQL or apply the schema${detail}`);
  }
}

/**
 * The service's hold on its SQLite file (no `DATABASE_URL`): one running instance per file. Two processes on one file
 * (`podman run` twice on one volume, two pods on one volume) both served, each handing out the delegate wallet's
 * nonces from its own memory, and about one write in six failed with 500 `SUBMISSION_FAILED` ("nonce too low").
 * The lock (adapters/sqlite/sqlite_instance_lock.ts) is taken first, before the signers and the devnet, and ends with
 * the process however it ends, so a `kill -9` leaves nothing stale.
 *
 * A second start refuses with one line rather than waiting for the lock: it never serves, the operator sees why at
 * once, and a restart policy starts it again (Compose's `restart`, Kubernetes' back-off) as a wait would have. No
 * shipped manifest starts a SQLite instance beside its predecessor: the compose file and the Kubernetes base run
 * PostgreSQL with a `/data` of each instance's own, and the binary's smoke test and the kill tests start again only
 * after the old process has exited. A waiting instance would instead look like a slow start forever, and a rolling
 * update whose new pod waits for the old one's file never ends either way (docs/deployment.md: `Recreate`).
 */
export function holdSqliteLock(config: Pick<Config, "storage">): SqliteInstanceLock | undefined {
  const { databaseUrl, databasePath } = config.storage;
  if (databaseUrl !== undefined || databasePath === ":memory:") return undefined;
  const taken = lockSqliteFile(databasePath);
  if (taken.ok) return taken.lock;
  if (taken.busy) {
    throw new StartupError(`DATABASE_PATH: ${databasePath} is used by another running instance (it holds ${taken.path}); SQLite storage serves one instance, use DATABASE_URL for several`);
  }
  throw new StartupError(`DATABASE_PATH: cannot take the instance lock ${taken.path}: ${taken.message}`);
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
