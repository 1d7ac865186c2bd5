/** Wiring of the HTTP side: the Elysia app given every capability's use cases, served by Bun. */
import { signerStates } from "./signers.ts";
import { loadConsoleBundle } from "../console/assets.ts";
import { loadWidgetBundle } from "../widgets/assets.ts";
import { type AppDeps, type AttestationsDeps, createApp } from "../http/app.ts";
import { drainServer, instrumentedHandler, requestClientAddress } from "../http/instrument.ts";
import { listenHttp, type ListeningHttp } from "./listen.ts";
import { httpCacheSettings } from "../http/http_cache.ts";
import { systemClock } from "../adapters/system/mod.ts";
import { createRateLimiter, type RateLimiter } from "../domain/rate_limit.ts";
import type { WiredAccounts } from "./accounts.ts";
import { type Config, privateOriginsOf } from "./config.ts";
import type { WiredDelegation } from "./delegation.ts";
import type { WiredDiscovery, wireWitness } from "./discovery.ts";
import { type Foundation, servedTrustAnchors } from "./foundation.ts";
import type { ChainGateState } from "../adapters/chain/mod.ts";
import type { ChainIndex, IndexRunner } from "./attestation_index.ts";
import { answerCache, wireChainReads } from "./chain_reads.ts";
import type { ServedChains } from "../domain/chains/mod.ts";
import type { WiredX402 } from "./payments.ts";
import type { WiredKeys } from "./keys.ts";
import { credentialCaller } from "../http/routes/keys/mod.ts";
import type { WiredOAuth } from "./oauth.ts";
import type { WiredMcp } from "./mcp.ts";
import type { WiredSubmissions } from "./submissions.ts";
import type { WiredWebhooks } from "./webhooks.ts";
import type { WiredInteractions } from "./interactions.ts";
import { createWitnessResume } from "../domain/witness/mod.ts";

/** Every capability, wired: what the routes are given. */
export type Capabilities = {
  readonly discovery: WiredDiscovery;
  readonly witness: ReturnType<typeof wireWitness>;
  readonly index: IndexRunner;
  /** The chains served (decisions §30); absent: the foundation's one chain. */
  readonly served?: ServedChains | undefined;
  /** Every attestation chain's index but the default chain's (decisions §30). */
  readonly otherChains?: readonly ChainIndex[] | undefined;
  readonly attestationList: AttestationsDeps["list"];
  readonly attestationQueries: AttestationsDeps["queries"];
  readonly attestationQueryRate: RateLimiter;
  readonly artifactTrust: Parameters<typeof createApp>[0]["artifactTrust"];
  readonly accounts: WiredAccounts;
  readonly delegation: WiredDelegation;
  readonly x402: WiredX402 | undefined;
  readonly keys: WiredKeys;
  /** OAuth 2 (decisions §19); undefined with `OAUTH=off`. */
  readonly oauth?: WiredOAuth | undefined;
  /** The MCP endpoint (decisions §20); undefined with `MCP=off`. */
  readonly mcp?: WiredMcp | undefined;
  /** Idempotency keys of writes (decisions §23), kept with the submission records. */
  readonly submissions: Pick<WiredSubmissions, "idempotency" | "tracker" | "status">;
  /** Webhook endpoints (decisions §22). */
  readonly webhooks?: Pick<WiredWebhooks, "endpoints" | "nudge"> | undefined;
  /** Proof of interaction and transaction proofs (decisions §29). */
  readonly interactions: WiredInteractions;
};

/** The HTTP server, serving. */
export type ServedHttp = {
  /** The port it listens on. */
  readonly port: number;
  /**
   * Answers `/readyz` 503 for `SHUTDOWN_DELAY_MS` while still serving, then stops taking requests and cuts the bodies
   * still arriving, lets the requests under way finish for the rest of `SHUTDOWN_GRACE_MS`, then answers the rest with their deadline answer and closes every connection
   * (http/instrument.ts drainServer). Resolves once no connection is left.
   */
  readonly drain: () => Promise<void>;
  /**
   * The lame duck: `/readyz` 503 for `SHUTDOWN_DELAY_MS` while every request is still served, each answer with
   * `Connection: close` (`drain` waits for it).
   */
  readonly quiesce: () => Promise<void>;
  /** Ends `SHUTDOWN_DELAY_MS` at once, if the drain is in it: a second signal. */
  readonly hurry: () => void;
};

/** What {@link serveHttp} serves: the foundation, the capabilities, and the listener when it was bound before. */
export type ServedParts = {
  readonly foundation: Foundation;
  readonly capabilities: Capabilities;
  /** The listener `listenHttp` bound before (`PORT=0`: the defaults name its port); absent: bound now. */
  readonly listening?: ListeningHttp | undefined;
};

/** The sections the HTTP side reads. */
type HttpConfig = Pick<Config, "accounts" | "chains" | "discovery" | "index" | "keys" | "relays" | "server" | "signers" | "widgets">;

/**
 * Builds the app from the capabilities and serves it on `HOST`:`PORT` (bound now, or before by `listenHttp`): the
 * server is given the app as a value, its edge (the fast path built from the routes' declarations) and its way in for
 * everything else.
 */
export function serveHttp(config: HttpConfig, parts: ServedParts): ServedHttp {
  const { foundation: f, capabilities: c, listening = listenHttp(config) } = parts;
  // Set on SIGTERM: `/readyz` answers 503 from then on, through SHUTDOWN_DELAY_MS while every request is still served.
  let stopping = false;
  const app = createApp(appDeps(config, f, c, () => stopping));
  const handler = instrumentedHandler(app, { metrics: f.metrics, log: f.log, trustProxy: config.server.trustProxy, bodyTimeoutMs: config.server.bodyTimeoutMs });
  const server = listening.serve(handler);
  // The lame duck (SHUTDOWN_DELAY_MS): still listening and serving while `/readyz` says 503, until a balancer that
  // checks it has taken the instance out. Stopping at once reset the requests a balancer still sent on its pooled
  // connections (it sees the instance up for `inter × fall`) and those waiting in the accept queue: a write reset so
  // is retried by no balancer, and its client got no answer at all. A second SIGTERM or SIGINT ends the delay.
  let quiescing: Promise<void> | undefined;
  let quiescedAt = 0;
  let endDelay: (() => void) | undefined;
  const quiesce = () =>
    quiescing ??= new Promise<void>((resolve) => {
      stopping = true;
      // Every answer from now on closes its connection: a client's next request opens a new one (to another
      // instance once the balancer has taken this one out), never reuses one the drain closes as it is sent.
      handler.quiesce();
      quiescedAt = performance.now();
      const timer = setTimeout(resolve, config.server.shutdownDelayMs);
      endDelay = () => (clearTimeout(timer), resolve());
    });
  return {
    port: listening.port,
    quiesce,
    drain: async () => {
      await quiesce();
      // The grace counts from the signal, the delay included: the process still exits within it and 5 s.
      const graceMs = Math.max(0, config.server.shutdownGraceMs - (performance.now() - quiescedAt));
      return await drainServer(server, handler, { graceMs });
    },
    hurry: () => endDelay?.(),
  };
}

/** What the app is given: the shared settings, and each plugin its own slice of the capabilities (http/app_deps.ts). */
function appDeps(config: HttpConfig, f: Foundation, c: Capabilities, stopping: () => boolean): AppDeps {
  const { storage, chainId, chain, easAddress } = f;
  const { sessions, subjects, subjectOwnership, plans } = c.accounts;
  const ledger = storage.ledger;
  const primarySubject = (account: Parameters<typeof subjects.primary>[0]) => subjects.primary(account);
  const bearer = c.oauth?.bearer;
  const { idempotency } = c.submissions;
  const tracking = { tracker: c.submissions.tracker, status: c.submissions.status, log: f.log };
  const indexAnswers = answerCache(config, c.index);
  return {
    session: {
      sessions,
      witness: c.witness,
      witnessResume: createWitnessResume({ ledger, nowMs: () => systemClock.nowMs() }),
      ledger,
      plans,
      clock: systemClock,
      secureCookies: !isLoopbackHost(new URL(config.server.publicBaseUrl).hostname),
      metrics: f.metrics,
      clientAddress: requestClientAddress,
      chainId,
      primarySubject,
      payments: c.x402?.gate,
      bearer,
      idempotency,
    },
    subjects: { sessions, subjects, bearer },
    privateRelay: {
      sessions,
      readNonce: c.delegation.readNonce,
      chainName: chain.name,
      chainId,
      easAddress,
      payments: c.x402?.gate,
      relay: c.delegation.privateRelay,
      bearer,
      idempotency,
      clientAddress: requestClientAddress,
      tracking,
      ...relayTurns(config).privateRelay,
    },
    submissions: { status: c.submissions.status, sessions, bearer },
    accounts: {
      primarySubject,
      sessions,
      accounts: storage.accounts,
      ledger,
      plans,
      clock: systemClock,
      chainId,
      premiumReads: { ledger: storage.premiumReads, limits: { free: config.accounts.premiumReads.free, paid: config.accounts.premiumReads.paid } },
      paidPeriod: (accountId, nowMs) => storage.payments.paidPeriod(accountId, nowMs),
      bearer,
    },
    subscriptions: c.x402 === undefined ? undefined : { sessions, bearer, gate: c.x402.gate, payments: storage.payments, ledger, plans, clock: systemClock, idempotency },
    didDocument: c.x402?.didDocument,
    subjectOwnership: c.accounts.publicSubjectOwnership,
    subjectOwnershipLimit: { clientRate: c.accounts.subjectOwnershipRate, clientAddress: requestClientAddress },
    signingKeys: { keys: c.keys.signingKeys, caller: credentialCaller(sessions, bearer) },
    webhooks: c.webhooks === undefined ? undefined : { sessions, bearer, webhooks: nudgingTests(c.webhooks), idempotency },
    keyStatus: { keyStatus: c.keys.keyStatus, clientRate: c.keys.clientRate, maxInFlight: c.keys.maxInFlight, clientAddress: requestClientAddress },
    // Controller authorization (decisions §25) shares key status's bounds: both are pure reads of the index.
    controllerAuthorization: { authorize: c.keys.controllerAuthorization, resolveDidUrl: c.keys.resolveDidUrl, clientRate: c.keys.clientRate, maxInFlight: c.keys.maxInFlight, clientAddress: requestClientAddress },
    premiumRpc: { sessions, premiumRpc: c.accounts.premiumRpc, bearer },
    oauth: c.oauth === undefined ? undefined : {
      oauth: c.oauth.oauth,
      keys: c.oauth.keys,
      sessions,
      issuer: c.oauth.issuer,
      chainId,
      assetVersion: async () => (await loadConsoleBundle()).version,
      clientAddress: requestClientAddress,
    },
    apiClients: c.oauth === undefined ? undefined : { oauth: c.oauth.oauth, sessions, bearer },
    mcp: c.mcp?.endpoint,
    metricsText: () => f.metrics.render(),
    console: { bundle: loadConsoleBundle, settings: { chainId, chainName: chain.name, serviceDnsLabel: config.discovery.serviceDnsLabel } },
    widgets: { bundle: loadWidgetBundle },
    interactions: { ...c.interactions, clientAddress: requestClientAddress },
    privateOrigins: privateOriginsOf(config.server),
    controller: { discover: c.discovery.confirmDiscover, confirm: c.discovery.confirm },
    artifactTrust: c.artifactTrust,
    artifactTrustClientAddress: requestClientAddress,
    attestations: {
      list: c.attestationList,
      queries: c.attestationQueries,
      queryRate: { rate: c.attestationQueryRate, clientAddress: requestClientAddress },
    },
    eas: {
      readNonce: c.delegation.readNonce,
      delegatedAttest: c.delegation.delegatedAttest,
      publicRelayClosed: c.delegation.publicRelayClosed,
      idempotency,
      tracking,
      clientAddress: requestClientAddress,
      chainName: chain.name,
      chainId,
      easAddress,
      keccak256: f.keccak256.hex,
      ...relayTurns(config).publicRelay,
    },
    // Decisions §29: the anchors' widget origins name where this service's widgets are served, its own origin first.
    trustAnchors: servedTrustAnchors(config, f.trustAnchors),
    log: f.log,
    publicBaseUrl: config.server.publicBaseUrl,
    // Decisions §21: an answer from the index is current for one poll, live evidence for as long as the service reuses it.
    httpCache: httpCacheSettings({ indexPollMs: config.index.pollMs, discoveryCacheSeconds: config.discovery.discoveryCacheSeconds }),
    indexAnswers,
    // Decisions §30: the chains served; another attestation chain's reads go to its own index.
    ...{ servedChains: c.served, chainReads: wireChainReads(config, f, c) },
    ready: readiness(config, f, c, stopping),
  };
}

/** The endpoints' use cases, a test event sent at once rather than at the worker's next tick. */
/**
 * The relays' turns, each instance's own count (as the attestation queries'), taken before any RPC or stored key:
 * nonce reads (an `eth_call` each) per address or account; the public relay's keyed writes per address (twice the
 * guard's writes: a client's new keyed writes, never an unbounded key store) and the private relay's writes per
 * account; and for each, as many key lookups again: a retry its key answers takes one of those instead of a turn
 * (domain/submissions/relay_submission.ts WriteRate; docs/endpoints.md, Retries).
 */
function relayTurns(config: HttpConfig) {
  const perMinute = (n: number) => createRateLimiter(systemClock, { capacity: n, perMinute: n });
  const { publicRelay, privateRelay } = config.relays;
  return {
    privateRelay: {
      accountRate: perMinute(privateRelay.accountPerMinute),
      accountLookupRate: perMinute(privateRelay.accountPerMinute),
      nonceRate: perMinute(publicRelay.noncePerMinute),
    },
    publicRelay: {
      nonceRate: perMinute(publicRelay.noncePerMinute),
      keyRate: perMinute(2 * publicRelay.ipPerMinute),
      keyLookupRate: perMinute(2 * publicRelay.ipPerMinute),
    },
  };
}

function nudgingTests(w: Pick<WiredWebhooks, "endpoints" | "nudge">): WiredWebhooks["endpoints"] {
  return {
    ...w.endpoints,
    async test(account, id) {
      const queued = await w.endpoints.test(account, id);
      if (queued.ok) w.nudge();
      return queued;
    },
  };
}

/** `/readyz`: the database, the node, the delegate's balance and a fresh index (decisions §21). */
function readiness(config: Pick<Config, "chains" | "signers">, f: Foundation, c: Capabilities, stopping: () => boolean) {
  const { storage, eas } = f;
  // The chain's part (`eth_chainId`, the delegate's balance) is read at most once a second: the route is public, and
  // any client's rate of `/readyz` was the provider's rate of calls. The database, the index and the signers are read
  // each time.
  const chainPart = atMostOnceASecond(() => Promise.all([eas.ping(), delegateBalance(f)]));
  // With OAUTH_SIGNER, its key revoked by an operator (docs/signing.md#rotation): the instance signs no access token,
  // and one a forgotten instance signed would be refused everywhere: shown (`oauth` false), not counted in `ready`. Counted,
  // revoking the key every instance signs with took every instance out of the balancer's pool, public reads and relays
  // with it, for a fault of the OAuth token endpoint alone.
  const oauthSigner = c.oauth !== undefined && f.signers.oauth !== undefined;
  return async () => {
    // Read before the indexes: a chain whose gate opens meanwhile is reported held once more, never fresh while held.
    const held = f.heldChains();
    const [database, [rpc, balance], status, chains, oauthSignerRevoked] = await Promise.all([
      storage.ping(),
      chainPart(),
      c.index.refresh().catch(() => undefined),
      otherChainsReadiness(c.otherChains ?? [], held),
      oauthSigner ? c.oauth!.keys.signerRevoked() : Promise.resolve(false),
    ]);
    // Shown, not counted in `ready`: under it the relays refuse writes themselves, and reads spend no gas. Counted, a wallet
    // running dry took every instance on it out of the balancer's pool, and every public read with them.
    const delegateFunded = balance === undefined ? undefined : balance >= config.signers.minDelegateBalanceWei;
    const { follower: _, ...indexStatus } = status ?? c.index.status();
    // A stale index (no poll completed for INDEX_STALL_SECONDS) makes every public read 503 INDEX_STALE: not ready.
    const indexFresh = status !== undefined && !status.stale;
    const defaultServes = rpc && indexFresh;
    // Decisions §30: one provider down fails its own chain only. With several attestation chains the instance is ready
    // while any of them serves; a chain that does not answers its own reads 503 INDEX_STALE naming it. Before, the
    // default chain's provider down took every instance out of the balancer, and every other chain's reads with it.
    const anotherServes = Object.values(chains ?? {}).some((chain) => (chain as { index: boolean }).index);
    const nodes = chainNodes(config.chains.list, held);
    return {
      ready: database && (defaultServes || anotherServes) && !stopping(),
      checks: {
        database,
        trustAnchors: true,
        rpc,
        ...(delegateFunded === undefined ? {} : { delegateBalance: delegateFunded }),
        index: indexFresh,
        ...(oauthSigner ? { oauth: !oauthSignerRevoked } : {}),
        // Stopping (SIGTERM): out of the balancer's pool before the instance stops listening (SHUTDOWN_DELAY_MS).
        ...(stopping() ? { accepting: false } : {}),
      },
      index: indexStatus,
      // Each role's signer (decisions §27): up, down (its last signature failed) or unknown (none asked for yet).
      signers: signerStates(f.signers),
      ...(chains === undefined ? {} : { chains }),
      ...(nodes === undefined ? {} : { nodes }),
    };
  };
}

/**
 * Decisions §30: each served chain's node by CAIP-2 id, when more than one chain is served (one chain's body is as
 * before): `checked` (it answered its chain id, at start or since), `unchecked` (it has not answered since the start,
 * or since a failed exchange: the chain is held closed, app/chain_checks.ts) or `wrong` (after the start it answered
 * another chain's id, or another EAS version or a revert: closed until a restart; an empty answer at EAS's address
 * keeps it `unchecked`). A held chain is shown, not counted in `ready`: one
 * provider down fails closed on its chain only, and the instance stays ready while the default chain serves.
 */
export function chainNodes(list: readonly { readonly caip2: string | undefined }[], held: ReadonlyMap<string, ChainGateState>): Record<string, ChainGateState> | undefined {
  if (list.length < 2) return undefined;
  return Object.fromEntries(list.flatMap(({ caip2 }) => (caip2 === undefined ? [] : [[caip2, held.get(caip2) ?? "checked"] as const])));
}

/**
 * Decisions §30: each other attestation chain's index, by CAIP-2 id. A stale chain fails its own reads (503 INDEX_STALE
 * naming it) and never makes the instance unready alone; taking the instance out of the balancer would fail every
 * chain's. The instance is unready only when no chain serves. A chain held closed (`held`: its node has not answered its
 * chain id since the start, or since a failed exchange) is never `index: true`, and carries its `node`: its index's
 * last poll may be recent (a restart within INDEX_STALL_SECONDS, or another instance's), but this instance cannot read
 * or write that chain.
 */
export async function otherChainsReadiness(chains: readonly ChainIndex[], held: ReadonlyMap<string, ChainGateState>): Promise<Record<string, unknown> | undefined> {
  if (chains.length === 0) return undefined;
  const entries = await Promise.all(chains.map(async ({ chain, index }) => {
    const status = await index.refresh().catch(() => undefined);
    const { follower: _, ...indexStatus } = status ?? index.status();
    const node = held.get(chain.caip2) ?? "checked";
    return [chain.caip2, { index: node === "checked" && status !== undefined && !status.stale, node, ...indexStatus }] as const;
  }));
  return Object.fromEntries(entries);
}

/** `read`'s answer shared by the calls while it runs and for a second after it was asked for. */
export function atMostOnceASecond<T>(read: () => Promise<T>, nowMs: () => number = Date.now): () => Promise<T> {
  let last: { readonly atMs: number; readonly answer: Promise<T>; running: boolean } | undefined;
  return () => {
    if (last !== undefined && (last.running || nowMs() - last.atMs < 1_000)) return last.answer;
    const kept = { atMs: nowMs(), answer: read(), running: true };
    last = kept;
    kept.answer.then(() => void (kept.running = false), () => {
      // A read that threw is not kept.
      kept.running = false;
      if (last === kept) last = undefined;
    });
    return kept.answer;
  };
}

/** The delegate's balance, undefined without a delegate, -1n when the chain does not answer. */
async function delegateBalance({ eas }: Foundation): Promise<bigint | undefined> {
  if (!eas.delegate) return undefined;
  try {
    return await eas.client.getBalance({ address: eas.delegate.address });
  } catch {
    return -1n;
  }
}

/** Cookies go without `Secure` only when the service is reached on loopback (development). */
function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]" || hostname === "::1";
}
