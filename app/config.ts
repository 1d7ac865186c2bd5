import { join } from "node:path";

/** The service's configuration, read once from the environment at start. */
export type Config = {
  readonly port: number;
  readonly host: string;
  readonly publicBaseUrl: string;
  readonly dataDir: string;
  /** Absent: the embedded devnet is started. */
  readonly rpcUrl: string | undefined;
  readonly activeChain: "testnet" | "mainnet";
  readonly trustAnchorsPath: string | undefined;
  readonly databasePath: string;
  /** `postgres://…`: PostgreSQL storage shared by several instances instead of the SQLite file. */
  readonly databaseUrl: string | undefined;
  readonly delegatePrivateKey: `0x${string}` | undefined;
  readonly witnessPrivateKey: `0x${string}` | undefined;
  /** The keys the service signs with (decisions §27, docs/signing.md). */
  readonly signers: SignersConfig;
  readonly subsidizedSchemas: readonly string[];
  readonly startBlock: bigint | undefined;
  /**
   * `ARTIFACT_TRUST_RPC_TIMEOUT_MS` (default 8000, from 100 to 60000): how long artifact trust waits for
   * one JSON-RPC HTTP request before counting it as timed out. A timed-out request is retried twice, so a
   * hanging node answers 502 NETWORK_ERROR after about three times this per lookup level.
   */
  readonly artifactTrustRpcTimeoutMs: number;
  readonly dnsServers: readonly string[];
  readonly allowPrivateNetwork: boolean;
  readonly serviceDnsLabel: string;
  readonly sessionTtlHours: number;
  readonly siweDomains: readonly string[];
  /**
   * `SIWE_CHALLENGE_RATE_PER_MINUTE` (default 10, from 1 to 10000): sign-in challenges one client address,
   * and one wallet, may be given per minute, counted in the database (decisions §15).
   */
  readonly siweChallengePerMinute: number;
  /**
   * `SUBJECTS_PER_ACCOUNT` (default 20, from 1 to 1000; issue 33): subjects one account may hold besides its
   * bootstrap subject; past it 403 `SUBJECT_LIMIT_EXCEEDED`. Every listed signing key is judged for every subject,
   * so `SIGNING_KEYS_PER_ACCOUNT` × `SUBJECTS_PER_ACCOUNT` (the verdicts of one `GET /api/private/signing-keys`
   * answer) must be at most {@link MAX_KEY_VERDICTS_PER_LIST}.
   */
  readonly subjectsPerAccount: number;
  readonly corsOrigins: readonly string[];
  /** `WIDGET_ORIGINS`: other origins serving this service's widgets, published after its own (decisions §29). */
  readonly widgetOrigins: readonly string[];
  /** `EXPLORER_API_URLS`: the Etherscan-compatible explorer API of each chain id, for proof of interaction (decisions §29). */
  readonly explorerApiUrls: ReadonlyMap<number, string>;
  readonly freePlanAnnualWrites: number;
  readonly paidPlanAnnualWrites: number;
  readonly freePlanSchemas: readonly string[];
  readonly paidPlanSchemas: readonly string[];
  /** `/readyz` fails while the delegate wallet holds less than this (wei). */
  readonly minDelegateBalanceWei: bigint;
  /** Witness requests a user may make per minute (also the burst). */
  readonly witnessUserPerMinute: number;
  /** Witness requests per minute for one subject domain, across all users (also the burst). */
  readonly witnessDomainPerMinute: number;
  /**
   * Controller discoveries per minute for one registrable domain (also the burst), shared by both
   * confirm views, artifact trust and the witness; each costs the domain 4 DNS queries and a fetch.
   */
  readonly discoveryDomainPerMinute: number;
  /**
   * `DISCOVERY_CACHE_SECONDS` (default 60, 0 turns it off, at most 3600): how long the read-only views
   * (both confirm endpoints, artifact trust's live check) reuse a complete discovery answer for one subject.
   * An answer with an unavailable source is kept a sixth as long; the witness never uses the cache.
   */
  readonly discoveryCacheSeconds: number;
  readonly logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /**
   * `BODY_TIMEOUT_MS` (default 10000, from 100 to 60000; issue 33): how long a request's body may take to arrive,
   * from the headers to its last byte. Past it the request is 408 `REQUEST_TIMEOUT` and its connection closed, far
   * below the route deadline (245 s) and the idle timeout (255 s), which a client dripping a byte now and then keeps
   * from expiring.
   */
  readonly bodyTimeoutMs: number;
  /**
   * `SHUTDOWN_GRACE_MS` (default 20000, from 0 to 120000; issue 33): on SIGTERM or SIGINT the service stops taking
   * requests and cuts the bodies still arriving (503 `SHUTTING_DOWN`), lets the requests under way finish for at
   * most this long, then answers those still running with their deadline answer and closes every connection, before
   * it closes the database and the devnet. Below the 30 s an orchestrator commonly waits before it kills.
   */
  readonly shutdownGraceMs: number;
  /**
   * `SECP256K1_LIBRARY` (issue 28): unset, the native libsecp256k1 when one of the usual names opens and passes its
   * known-answer check, else @noble/curves; `none`, @noble/curves; a path or name, that library or a startup error.
   */
  readonly secp256k1Library: string | undefined;
  /**
   * `RPC_SEND_SYNC` (issue 28): `auto` (default) sends the service's transactions by `eth_sendRawTransactionSync`
   * (EIP-7966, the receipt in the send's answer) while the node mines on arrival; `off`, always
   * `eth_sendRawTransaction` and receipt polls.
   */
  readonly rpcSendSync: "auto" | "off";
  /**
   * The attestation index (decisions §11, §21). `INDEX_CONFIRMATIONS` (default 12; 0 on the embedded devnet): blocks
   * behind the head that may still be reorganized (the follower reads them too, keeping each one's hash and marking
   * their rows as the tail). `INDEX_POLL_MS` (default 1000): how often the follower polls the chain's head.
   * `INDEX_STALL_SECONDS` (default 120): with no completed poll for this long, public reads are 503 INDEX_STALE and
   * `/readyz` is not ready. `RPC_WS_URL` (optional, `ws://` or `wss://`): each `newHeads` notification from it makes
   * the follower poll at once; the timed poll goes on as the fallback.
   * `INDEX_LEASE_SECONDS` (default 15): how long a follower's lease lasts; another instance takes over within it.
   * `INDEX_STEP_BLOCKS` (default 10000): the widest range one follower step ingests in one transaction.
   * `INDEX_FOLLOW` (default true): false runs no follower in this instance (it still reads the shared index).
   * `INDEX_ANSWER_CACHE_MB` (default 32): the bound of the whole answers of index reads kept per poll generation
   * (http/index_answer_cache.ts); 0 keeps none. `INDEX_HEAD_REUSE_MS` (default 100, at most 1000): how long one read
   * of the index head serves the kept answers' requests after it; a poll of this instance's follower ends it at once.
   * `INDEX_QUERY_RATE_PER_MINUTE` (default 300): list and count answers one client address may have computed a minute
   * (a kept answer is free); past it 429 `RATE_LIMITED` with `Retry-After`; per instance (issue 43).
   */
  /**
   * The public relay (decisions §12): `PUBLIC_RELAY` (`on`/`off`, default on), `PUBLIC_RELAY_IP_RATE_PER_MINUTE`
   * (default 30), `PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR` (default 20), `PUBLIC_RELAY_GAS_BUDGET_PER_HOUR` (gas units,
   * default 50,000,000). `TRUST_PROXY` (default 0): how many proxies in front of the service append to
   * `X-Forwarded-For`; 0 uses the peer address. Issue 43: `PUBLIC_RELAY_MAX_GAS_PER_TX` (default 3,000,000: a review
   * with receipt proofs needs about 1,400,000) bounds one public request, and each client address and each attester
   * may spend at most `PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR` and `PUBLIC_RELAY_GAS_PER_ATTESTER_PER_HOUR` of the budget
   * (default each a tenth of it, at least one request of the most gas allowed where the budget holds that much).
   */
  readonly publicRelay: {
    readonly enabled: boolean;
    readonly ipPerMinute: number;
    readonly attesterPerHour: number;
    readonly gasPerHour: bigint;
    readonly maxGasPerTx: number;
    readonly clientGasPerHour: bigint;
    readonly attesterGasPerHour: bigint;
  };
  readonly trustProxy: number;
  /**
   * The private relay (decisions §12): `SUBJECT_SCOPED_SCHEMAS` (schema names only a subject's owner may write;
   * default key-binding, linked-identifier, user-review-response) and `MAX_GAS_PER_TX` (default 1000000).
   * `PRIVATE_RELAY_GAS_BUDGET_PER_HOUR` (gas units, default 50,000,000; issue 23): the gas the private relay may
   * charge per UTC hour, all accounts and instances together; past it 429 `RATE_LIMITED` before any RPC.
   */
  readonly privateRelay: { readonly subjectScoped: readonly string[]; readonly maxGasPerTx: number; readonly gasPerHour: bigint };
  /**
   * Fee bumps (performance_reliability §b row 24): a submission's transaction still pending `FEE_BUMP_AFTER_SECONDS`
   * (default 120; 0 turns bumps off) after it or its last replacement was signed is replaced by the reconciler with
   * fees raised at least 12.5%, at most `FEE_BUMP_MAX` (default 5) times.
   */
  readonly feeBump: { readonly afterSeconds: number; readonly max: number };
  /**
   * Premium reads (decisions §12): `FREE_PLAN_ANNUAL_PREMIUM_READS` (default 100), `PAID_PLAN_ANNUAL_PREMIUM_READS`
   * (default 100000), `PREMIUM_RPC_MAX_LOG_RANGE` (blocks, default 50000).
   */
  readonly premiumReads: { readonly free: number; readonly paid: number; readonly maxLogRange: number };
  /**
   * The premium proxy's bounds (issue 23): `PREMIUM_RPC_MAX_CALL_GAS` (an eth_call's gas cap, also its gas when it
   * names none; default 30000000), `PREMIUM_RPC_TIMEOUT_MS` (one round trip to the node; default 10000),
   * `PREMIUM_RPC_MAX_IN_FLIGHT_PER_ACCOUNT` (default 4) and `PREMIUM_RPC_MAX_IN_FLIGHT` (default 16): requests
   * waiting on the node at once, past which 429 `RATE_LIMITED`.
   */
  readonly premiumRpc: { readonly maxCallGas: number; readonly timeoutMs: number; readonly maxInFlightPerAccount: number; readonly maxInFlight: number };
  /**
   * Paying with x402 (decisions §13). Prices are atomic units of the token; an unset price is not offered. On the
   * embedded devnet everything defaults to the devnet's test token and facilitator, with prices of 10000 (witness),
   * 5000 (relay) and 1000000 (a year of the paid plan); against a real chain a price needs `X402_FACILITATOR_URL`,
   * `X402_ASSET` and `X402_PAY_TO`. `X402_NETWORK` defaults to `eip155:<chain id>`; `X402_ASSET_NAME` and
   * `X402_ASSET_VERSION` are the token's EIP-712 domain (default `USD Coin`, `2`); `X402_SIGNING_KEY` signs offers
   * and receipts (eip712; default the witness key, never the payTo wallet). `X402_SIGNING_FORMAT` (decisions §18):
   * `eip712` (default) or `jws` (ES256, the private JWK in `X402_JWS_KEY`; on the devnet generated once and kept in
   * `DATA_DIR`; the identity is the did:web of `PUBLIC_BASE_URL`'s host, key `#key-1`, published at
   * `/.well-known/did.json`).
   */
  readonly x402: {
    readonly facilitatorUrl: string | undefined;
    readonly asset: `0x${string}` | undefined;
    readonly assetName: string | undefined;
    readonly assetVersion: string | undefined;
    readonly network: string | undefined;
    readonly payTo: `0x${string}` | undefined;
    readonly witnessPrice: string | undefined;
    readonly relayPrice: string | undefined;
    readonly paidPlanPrice: string | undefined;
    readonly signingKey: `0x${string}` | undefined;
    readonly signingFormat: "eip712" | "jws";
    /** The ES256 private JWK (JSON) of `jws` signing; undefined: the devnet's own, kept in `DATA_DIR`. */
    readonly jwsKey: string | undefined;
  };
  /**
   * OAuth 2 for registered software (decisions §19): `OAUTH` (`on`/`off`, default on); `OAUTH_REGISTER_RATE_PER_HOUR`
   * (default 10): open registrations one client address may make per hour; `OAUTH_REGISTRATIONS_PER_HOUR` (default
   * 1000): open registrations of everyone together per hour; `OAUTH_REFRESH_TOKEN_TTL_DAYS` (default 30);
   * `OAUTH_KEY_ROTATION_DAYS` (default 30): the token-signing key is replaced when it is this old;
   * `OAUTH_LIVE_CODES_PER_ACCOUNT` (default 10) and `OAUTH_LIVE_CODES_PER_CLIENT` (default 1000): authorization codes
   * not yet exchanged nor expired that one account, and one client, may hold; `OAUTH_GRANTS_PER_ACCOUNT` (default
   * 100): unrevoked grants one account may hold, the oldest revoked past it.
   */
  readonly oauth: {
    readonly enabled: boolean;
    readonly registerPerClientPerHour: number;
    readonly registrationsPerHour: number;
    readonly refreshTokenTtlDays: number;
    readonly keyRotationDays: number;
    readonly liveCodesPerAccount: number;
    readonly liveCodesPerClient: number;
    readonly grantsPerAccount: number;
  };
  readonly index: {
    /** `RPC_WS_URL`: the node's WebSocket endpoint, whose `newHeads` make the follower poll at once. */
    readonly wsUrl: string | undefined;
    readonly confirmations: number | undefined;
    readonly pollMs: number;
    readonly stallSeconds: number;
    readonly leaseSeconds: number;
    readonly stepBlocks: number;
    readonly follow: boolean;
    /** `INDEX_ANSWER_CACHE_MB`: the bound of kept answers of index reads, in MiB; 0: none kept. */
    readonly answerCacheMb: number;
    /** `INDEX_HEAD_REUSE_MS`: how long one head read serves the answer cache (0: each burst of requests reads it). */
    readonly headReuseMs: number;
    /** `INDEX_QUERY_RATE_PER_MINUTE`: list and count answers one client address may have computed a minute (issue 43). */
    readonly queryPerMinute: number;
  };
  /**
   * Signing keys and key status (decisions §17): `SIGNING_KEYS_PER_ACCOUNT` (keys one account may register, default
   * 100), `KEY_STATUS_RATE_PER_MINUTE` (public key-status lookups per client address, default 60) and
   * `KEY_STATUS_MAX_IN_FLIGHT` (lookups the service runs at once, default 16); past either, 429 `RATE_LIMITED`. Both
   * are per instance: pure reads (decisions §21).
   */
  readonly keys: { readonly maxPerAccount: number; readonly statusPerMinute: number; readonly statusMaxInFlight: number };
  /**
   * The MCP endpoint `/mcp` (decisions §20): `MCP` (`on`/`off`, default on); `MCP_MAX_SESSIONS` (sessions kept at
   * once, all instances together, default 1000; a new one past it removes the least recently used); `MCP_SESSION_IDLE_SECONDS` (a session
   * unused this long is closed, default 900); `MCP_MAX_IN_FLIGHT` (tool calls running at once, default 32; past it
   * a call is the tool error `RATE_LIMITED`; per instance); `MCP_SESSION_RATE_PER_MINUTE` (new sessions per client address,
   * default 30; past it `initialize` is 429); `MCP_SESSION_MESSAGES_PER_MINUTE` (JSON-RPC messages one session may
   * send per minute, every method counted, default 120, at least the largest batch; past it the POST is 429).
   */
  /**
   * Webhooks (decisions §22): `WEBHOOK_CONFIRMATIONS` (blocks an event waits for; default `INDEX_CONFIRMATIONS`, 0 on
   * the devnet), `WEBHOOK_RETRY_SECONDS` (the delays between attempts, default `5,300,1800,7200,18000,36000,36000`),
   * `WEBHOOK_MAX_IN_FLIGHT` (deliveries one instance sends at once, default 32), `WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT`
   * (deliveries to one account's endpoints at once, all instances together, default a quarter of
   * `WEBHOOK_MAX_IN_FLIGHT` and at least 8, two endpoints' worth; issue 43), `WEBHOOK_POLL_MS` (how often an
   * instance looks for due deliveries and new events, default 500), `WEBHOOKS` (`on`/`off`, default on: off, no
   * outbox is written and nothing sent), `WEBHOOK_DELIVERY` (`on`/`off`, default on: off, this instance fans out and
   * sends nothing; others on the same database do).
   */
  readonly webhooks: {
    readonly enabled: boolean;
    readonly delivery: boolean;
    readonly confirmations: number | undefined;
    readonly retrySeconds: readonly number[];
    readonly maxInFlight: number;
    readonly maxInFlightPerAccount: number;
    readonly pollMs: number;
  };
  readonly mcp: {
    readonly enabled: boolean;
    readonly maxSessions: number;
    readonly sessionIdleSeconds: number;
    readonly maxInFlight: number;
    readonly sessionsPerMinute: number;
    readonly sessionMessagesPerMinute: number;
  };
};

/**
 * Each role's signer URI (`DELEGATE_SIGNER`, `WITNESS_SIGNER`, `X402_SIGNER`, `OAUTH_SIGNER`; decisions §27). A role
 * without one keeps today's variable, as `env:<VARIABLE>`: the delegate `DELEGATE_PRIVATE_KEY`, the witness
 * `WITNESS_PRIVATE_KEY` or else the delegate's signer, the x402 issuer `X402_SIGNING_KEY` (eip712, else the witness's
 * signer) or `X402_JWS_KEY` (jws), OAuth none (keys generated and rotated in the store). Undefined: the role has no key.
 */
export type SignersConfig = {
  readonly delegate: string | undefined;
  readonly witness: string | undefined;
  readonly x402: string | undefined;
  readonly oauth: string | undefined;
  /** `<ROLE>_ADDRESS`: the address a role's key must answer for (Ethereum roles). */
  readonly addresses: { readonly delegate?: string | undefined; readonly witness?: string | undefined; readonly x402?: string | undefined };
  /** `SIGNER_TIMEOUT_MS` (default 5000, from 100 to 60000): a signature not given in time is a 503 SIGNER_UNAVAILABLE. */
  readonly timeoutMs: number;
  /** `ALLOW_RAW_KEYS` (default false): a raw key starts the service on a chain that is not a devnet, with a warning. */
  readonly allowRawKeys: boolean;
  /** The environment `env:` URIs and `password-env=` read (the process's own). */
  readonly env: Readonly<Record<string, string | undefined>>;
};

/** A configuration value that stops the server at start; the message names the variable. */
export class ConfigError extends Error {
  constructor(readonly variable: string, reason: string) {
    super(`${variable}: ${reason}`);
    this.name = "ConfigError";
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/** The most key verdicts (keys × subjects) one `GET /api/private/signing-keys` answer may hold: about 2.5 MB of JSON. */
export const MAX_KEY_VERDICTS_PER_LIST = 20_000;

/** Reads and validates the configuration from an environment map. */
export function readConfig(env: Env): Config {
  const { get, int, bool, list, key } = envReaders(env);
  const port = int("PORT", 8080, 0, 65_535);
  const host = get("HOST") ?? "127.0.0.1";
  const dataDir = get("DATA_DIR") ?? ".ats";
  const rpcUrl = get("RPC_URL");
  if (rpcUrl !== undefined && !/^https?:\/\//.test(rpcUrl)) {
    throw new ConfigError("RPC_URL", "expected an http(s) URL");
  }
  const chainSetting = get("NEXT_PUBLIC_ACTIVE_CHAIN") ?? "omachain-testnet";
  let activeChain: Config["activeChain"];
  if (chainSetting === "testnet" || chainSetting === "omachain-testnet") activeChain = "testnet";
  else if (chainSetting === "mainnet" || chainSetting === "omachain-mainnet") activeChain = "mainnet";
  else {
    throw new ConfigError(
      "NEXT_PUBLIC_ACTIVE_CHAIN",
      `expected testnet, omachain-testnet, mainnet or omachain-mainnet, got "${chainSetting}"`,
    );
  }
  const trustAnchorsPath = get("TRUST_ANCHORS_PATH");
  if (rpcUrl !== undefined && trustAnchorsPath === undefined) {
    throw new ConfigError("TRUST_ANCHORS_PATH", "required when RPC_URL is set");
  }
  const databaseUrl = get("DATABASE_URL");
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL", "expected a postgres:// URL");
  }
  // STORAGE=postgres: a deployment of several instances says so (deploy/compose.yaml, deploy/k8s), so one started
  // without its DATABASE_URL stops instead of serving from a SQLite file of its own (issue 45).
  const storage = get("STORAGE");
  if (storage !== undefined && storage !== "postgres" && storage !== "sqlite") {
    throw new ConfigError("STORAGE", `expected postgres or sqlite, got "${storage}"`);
  }
  if (storage === "postgres" && databaseUrl === undefined) throw new ConfigError("DATABASE_URL", "required when STORAGE is postgres");
  if (storage === "sqlite" && databaseUrl !== undefined) throw new ConfigError("DATABASE_URL", "set, but STORAGE is sqlite");
  const delegatePrivateKey = key("DELEGATE_PRIVATE_KEY");
  const startBlockRaw = get("START_BLOCK");
  if (startBlockRaw !== undefined && !/^[0-9]+$/.test(startBlockRaw)) {
    throw new ConfigError("START_BLOCK", "expected a block number");
  }
  const minBalance = get("MIN_DELEGATE_BALANCE_WEI") ?? "10000000000000000";
  if (!/^[0-9]+$/.test(minBalance)) throw new ConfigError("MIN_DELEGATE_BALANCE_WEI", "expected a whole number of wei");
  const logLevel = get("LOG_LEVEL") ?? "info";
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel)) {
    throw new ConfigError("LOG_LEVEL", "expected debug, info, warn, error or silent");
  }
  const x402 = readX402(get, key, rpcUrl === undefined);
  const keys = readKeys(env);
  const subjectsPerAccount = int("SUBJECTS_PER_ACCOUNT", 20, 1, 1_000);
  if (keys.maxPerAccount * subjectsPerAccount > MAX_KEY_VERDICTS_PER_LIST) {
    throw new ConfigError(
      "SUBJECTS_PER_ACCOUNT",
      `SIGNING_KEYS_PER_ACCOUNT × SUBJECTS_PER_ACCOUNT (the key verdicts of one signing-key list) must be at most ${MAX_KEY_VERDICTS_PER_LIST}`,
    );
  }
  const publicBaseUrl = get("PUBLIC_BASE_URL") ?? `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  try {
    new URL(publicBaseUrl);
  } catch {
    throw new ConfigError("PUBLIC_BASE_URL", "expected an absolute URL");
  }

  return {
    port,
    host,
    publicBaseUrl,
    dataDir,
    rpcUrl,
    activeChain,
    trustAnchorsPath,
    databasePath: get("DATABASE_PATH") ?? join(dataDir, "ats.sqlite"),
    databaseUrl,
    delegatePrivateKey,
    witnessPrivateKey: key("WITNESS_PRIVATE_KEY") ?? delegatePrivateKey,
    signers: readSigners(env, get, int, bool, x402.signingFormat),
    subsidizedSchemas: list("SUBSIDIZED_SCHEMAS", ["user-review", "linked-identifier"]),
    startBlock: startBlockRaw === undefined ? undefined : BigInt(startBlockRaw),
    artifactTrustRpcTimeoutMs: int("ARTIFACT_TRUST_RPC_TIMEOUT_MS", 8_000, 100, 60_000),
    dnsServers: list("DNS_SERVERS", ["1.1.1.1", "8.8.8.8"]),
    allowPrivateNetwork: bool("ALLOW_PRIVATE_NETWORK", false),
    serviceDnsLabel: get("SERVICE_DNS_LABEL") ?? "omatrust",
    sessionTtlHours: int("SESSION_TTL_HOURS", 24 * 7, 1),
    siweDomains: list("SIWE_DOMAINS", [`${host}:${port}`, `localhost:${port}`]),
    siweChallengePerMinute: int("SIWE_CHALLENGE_RATE_PER_MINUTE", 10, 1, 10_000),
    subjectsPerAccount,
    corsOrigins: list("CORS_ORIGINS", []),
    widgetOrigins: list("WIDGET_ORIGINS", []),
    explorerApiUrls: explorerApiUrls(list("EXPLORER_API_URLS", [])),
    freePlanAnnualWrites: int("FREE_PLAN_ANNUAL_WRITES", 10),
    paidPlanAnnualWrites: int("PAID_PLAN_ANNUAL_WRITES", 1000),
    freePlanSchemas: list("FREE_PLAN_SCHEMAS", ["controller-witness"]),
    paidPlanSchemas: list("PAID_PLAN_SCHEMAS", ["*"]),
    minDelegateBalanceWei: BigInt(minBalance),
    witnessUserPerMinute: int("WITNESS_USER_RATE_PER_MINUTE", 20, 1),
    witnessDomainPerMinute: int("WITNESS_DOMAIN_RATE_PER_MINUTE", 6, 1),
    discoveryDomainPerMinute: int("DISCOVERY_DOMAIN_RATE_PER_MINUTE", 30, 1),
    discoveryCacheSeconds: int("DISCOVERY_CACHE_SECONDS", 60, 0, 3_600),
    logLevel: logLevel as Config["logLevel"],
    bodyTimeoutMs: int("BODY_TIMEOUT_MS", 10_000, 100, 60_000),
    shutdownGraceMs: int("SHUTDOWN_GRACE_MS", 20_000, 0, 120_000),
    secp256k1Library: get("SECP256K1_LIBRARY"),
    rpcSendSync: sendSyncMode(get("RPC_SEND_SYNC")),
    ...readRelaysAndReads(env),
    x402,
    oauth: readOAuth(env),
    index: readIndex(env),
    keys,
    mcp: readMcp(env),
    webhooks: readWebhooks(env),
  };
}

/** Webhooks (decisions §22). */
function readWebhooks(env: Env): Config["webhooks"] {
  const { get, int, onOff } = envReaders(env);
  const retries = get("WEBHOOK_RETRY_SECONDS") ?? "5,300,1800,7200,18000,36000,36000";
  const retrySeconds = retries.split(",").map((s) => s.trim());
  if (retrySeconds.length > 20 || retrySeconds.some((s) => !/^[0-9]{1,6}$/.test(s))) {
    throw new ConfigError("WEBHOOK_RETRY_SECONDS", `expected up to 20 comma-separated whole numbers of seconds, got "${retries}"`);
  }
  const maxInFlight = int("WEBHOOK_MAX_IN_FLIGHT", 32, 1, 10_000);
  return {
    enabled: onOff("WEBHOOKS", true),
    delivery: onOff("WEBHOOK_DELIVERY", true),
    confirmations: get("WEBHOOK_CONFIRMATIONS") === undefined ? undefined : int("WEBHOOK_CONFIRMATIONS", 12, 0, 10_000),
    retrySeconds: retrySeconds.map(Number),
    maxInFlight,
    // Two endpoints' worth at least, so that one slow endpoint never holds its whole account's share.
    maxInFlightPerAccount: int("WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT", Math.max(8, Math.floor(maxInFlight / 4)), 1, 10_000),
    pollMs: int("WEBHOOK_POLL_MS", 500, 10, 60_000),
  };
}

/** The typed readers of an environment map: each names the variable in its error. */
function envReaders(env: Env) {
  const get = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === "" ? undefined : value;
  };
  const int = (name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) => {
    const raw = get(name);
    if (raw === undefined) return fallback;
    if (!/^[0-9]+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${raw}"`);
    const n = Number(raw);
    if (n < min || n > max) throw new ConfigError(name, `expected a number from ${min} to ${max}`);
    return n;
  };
  const bool = (name: string, fallback: boolean) => {
    const raw = get(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (["true", "1", "yes"].includes(raw)) return true;
    if (["false", "0", "no"].includes(raw)) return false;
    throw new ConfigError(name, `expected true or false, got "${raw}"`);
  };
  const onOff = (name: string, fallback: boolean) => {
    const raw = get(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (["on", "true", "1", "yes"].includes(raw)) return true;
    if (["off", "false", "0", "no"].includes(raw)) return false;
    throw new ConfigError(name, `expected on or off, got "${raw}"`);
  };
  const list = (name: string, fallback: readonly string[]) => {
    const raw = get(name);
    if (raw === undefined) return fallback;
    return raw.split(",").map((s) => s.trim()).filter((s) => s !== "");
  };
  const key = (name: string) => {
    const raw = get(name);
    if (raw === undefined) return undefined;
    const hex = raw.startsWith("0x") ? raw.slice(2) : raw;
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new ConfigError(name, "expected 32 bytes of hex (64 characters)");
    return `0x${hex.toLowerCase()}` as `0x${string}`;
  };
  return { get, int, bool, onOff, list, key };
}

/** The relays' guards and budgets, the submissions' fee bumps and the premium reads (decisions §12, §15, issue 23). */
function readRelaysAndReads(env: Env): Pick<Config, "publicRelay" | "trustProxy" | "privateRelay" | "feeBump" | "premiumReads" | "premiumRpc"> {
  const { int, onOff, list } = envReaders(env);
  const gasPerHour = int("PUBLIC_RELAY_GAS_BUDGET_PER_HOUR", 50_000_000, 1);
  const publicMaxGasPerTx = int("PUBLIC_RELAY_MAX_GAS_PER_TX", 3_000_000, 21_000);
  // A tenth of the hour's budget, and room for one request of the most gas allowed where the budget has it.
  const share = Math.max(Math.floor(gasPerHour / 10), Math.min(gasPerHour, publicMaxGasPerTx));
  return {
    publicRelay: {
      enabled: onOff("PUBLIC_RELAY", true),
      ipPerMinute: int("PUBLIC_RELAY_IP_RATE_PER_MINUTE", 30, 1, 1_000_000),
      attesterPerHour: int("PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR", 20, 1, 1_000_000),
      gasPerHour: BigInt(gasPerHour),
      maxGasPerTx: publicMaxGasPerTx,
      clientGasPerHour: BigInt(int("PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR", share, 1)),
      attesterGasPerHour: BigInt(int("PUBLIC_RELAY_GAS_PER_ATTESTER_PER_HOUR", share, 1)),
    },
    trustProxy: int("TRUST_PROXY", 0, 0, 16),
    privateRelay: {
      subjectScoped: list("SUBJECT_SCOPED_SCHEMAS", ["key-binding", "linked-identifier", "user-review-response"]),
      maxGasPerTx: int("MAX_GAS_PER_TX", 1_000_000, 21_000),
      gasPerHour: BigInt(int("PRIVATE_RELAY_GAS_BUDGET_PER_HOUR", 50_000_000, 1)),
    },
    feeBump: { afterSeconds: int("FEE_BUMP_AFTER_SECONDS", 120, 0, 86_400), max: int("FEE_BUMP_MAX", 5, 0, 50) },
    premiumReads: {
      free: int("FREE_PLAN_ANNUAL_PREMIUM_READS", 100),
      paid: int("PAID_PLAN_ANNUAL_PREMIUM_READS", 100_000),
      maxLogRange: int("PREMIUM_RPC_MAX_LOG_RANGE", 50_000, 1),
    },
    premiumRpc: {
      maxCallGas: int("PREMIUM_RPC_MAX_CALL_GAS", 30_000_000, 21_000, 1_000_000_000),
      timeoutMs: int("PREMIUM_RPC_TIMEOUT_MS", 10_000, 100, 120_000),
      maxInFlightPerAccount: int("PREMIUM_RPC_MAX_IN_FLIGHT_PER_ACCOUNT", 4, 1, 1_000),
      maxInFlight: int("PREMIUM_RPC_MAX_IN_FLIGHT", 16, 1, 10_000),
    },
  };
}

/** The attestation index's follower (decisions §11, §21). */
function readIndex(env: Env): Config["index"] {
  const { get, int, bool } = envReaders(env);
  const wsUrl = get("RPC_WS_URL");
  if (wsUrl !== undefined && !/^wss?:\/\/[^\s]+$/.test(wsUrl)) throw new ConfigError("RPC_WS_URL", "expected a ws(s) URL");
  return {
    wsUrl,
    confirmations: get("INDEX_CONFIRMATIONS") === undefined ? undefined : int("INDEX_CONFIRMATIONS", 12, 0, 10_000),
    pollMs: int("INDEX_POLL_MS", 1_000, 50, 86_400_000),
    stallSeconds: int("INDEX_STALL_SECONDS", 120, 1),
    leaseSeconds: int("INDEX_LEASE_SECONDS", 15, 1, 3_600),
    stepBlocks: int("INDEX_STEP_BLOCKS", 10_000, 1, 10_000_000),
    follow: bool("INDEX_FOLLOW", true),
    answerCacheMb: int("INDEX_ANSWER_CACHE_MB", 32, 0, 4_096),
    headReuseMs: int("INDEX_HEAD_REUSE_MS", 100, 0, 1_000),
    queryPerMinute: int("INDEX_QUERY_RATE_PER_MINUTE", 300, 1, 1_000_000),
  };
}

/** Signing keys and key status (decisions §17). */
function readKeys(env: Env): Config["keys"] {
  const { int } = envReaders(env);
  return {
    maxPerAccount: int("SIGNING_KEYS_PER_ACCOUNT", 100, 1, 100_000),
    statusPerMinute: int("KEY_STATUS_RATE_PER_MINUTE", 60, 1, 1_000_000),
    statusMaxInFlight: int("KEY_STATUS_MAX_IN_FLIGHT", 16, 1, 10_000),
  };
}

/** The MCP endpoint (decisions §20). */
function readMcp(env: Env): Config["mcp"] {
  const { int, onOff } = envReaders(env);
  return {
    enabled: onOff("MCP", true),
    maxSessions: int("MCP_MAX_SESSIONS", 1_000, 1, 1_000_000),
    sessionIdleSeconds: int("MCP_SESSION_IDLE_SECONDS", 900, 1, 86_400),
    maxInFlight: int("MCP_MAX_IN_FLIGHT", 32, 1, 10_000),
    sessionsPerMinute: int("MCP_SESSION_RATE_PER_MINUTE", 30, 1, 1_000_000),
    // At least one whole batch (http/routes/mcp: MCP_MAX_BATCH, 10), so that a batch can ever be answered.
    sessionMessagesPerMinute: int("MCP_SESSION_MESSAGES_PER_MINUTE", 120, 10, 1_000_000),
  };
}

/** OAuth 2 for registered software (decisions §19). */
function readOAuth(env: Env): Config["oauth"] {
  const { int, onOff } = envReaders(env);
  return {
    enabled: onOff("OAUTH", true),
    registerPerClientPerHour: int("OAUTH_REGISTER_RATE_PER_HOUR", 10, 1, 100_000),
    registrationsPerHour: int("OAUTH_REGISTRATIONS_PER_HOUR", 1_000, 1, 1_000_000),
    refreshTokenTtlDays: int("OAUTH_REFRESH_TOKEN_TTL_DAYS", 30, 1, 365),
    keyRotationDays: int("OAUTH_KEY_ROTATION_DAYS", 30, 1, 365),
    liveCodesPerAccount: int("OAUTH_LIVE_CODES_PER_ACCOUNT", 10, 1, 1_000),
    liveCodesPerClient: int("OAUTH_LIVE_CODES_PER_CLIENT", 1_000, 1, 1_000_000),
    grantsPerAccount: int("OAUTH_GRANTS_PER_ACCOUNT", 100, 1, 10_000),
  };
}

/** The devnet's prices, in units of its six-decimal test token: 0.01 a witness, 0.005 a relay write, 1 a plan year. */
export const DEVNET_X402_PRICES = { witness: "10000", relay: "5000", paidPlan: "1000000" } as const;

/** How the service signs its own offers and receipts (decisions §18): `X402_SIGNING_FORMAT`, `X402_JWS_KEY`. */
function readX402Jws(get: (name: string) => string | undefined, devnet: boolean): Pick<Config["x402"], "signingFormat" | "jwsKey"> {
  const format = get("X402_SIGNING_FORMAT") ?? "eip712";
  if (format !== "eip712" && format !== "jws") throw new ConfigError("X402_SIGNING_FORMAT", "expected eip712 or jws");
  const jwsKey = get("X402_JWS_KEY");
  if (jwsKey !== undefined) {
    let jwk: Record<string, unknown> | undefined;
    try {
      jwk = JSON.parse(jwsKey) as Record<string, unknown>;
    } catch {
      jwk = undefined;
    }
    if (jwk?.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.d !== "string" || typeof jwk.x !== "string" || typeof jwk.y !== "string") {
      throw new ConfigError("X402_JWS_KEY", "expected a private P-256 JWK (JSON with kty EC, crv P-256, x, y, d)");
    }
  }
  if (format === "jws" && jwsKey === undefined && !devnet) throw new ConfigError("X402_JWS_KEY", "required when X402_SIGNING_FORMAT is jws");
  return { signingFormat: format, jwsKey };
}

/** `RPC_SEND_SYNC`: `auto` (unset) or `off`. */
function sendSyncMode(value: string | undefined): Config["rpcSendSync"] {
  if (value === undefined || value === "auto") return "auto";
  if (value === "off") return "off";
  throw new ConfigError("RPC_SEND_SYNC", `expected auto or off, got "${value}"`);
}

/** Reads the x402 settings (decisions §13); `devnet`: no RPC_URL, so the embedded devnet fills what is unset. */
function readX402(
  get: (name: string) => string | undefined,
  key: (name: string) => `0x${string}` | undefined,
  devnet: boolean,
): Config["x402"] {
  const address = (name: string) => {
    const raw = get(name);
    if (raw === undefined) return undefined;
    if (!/^0x[0-9a-fA-F]{40}$/.test(raw)) throw new ConfigError(name, "expected a 20-byte hex address");
    return raw as `0x${string}`;
  };
  const price = (name: string, fallback: string) => {
    const raw = get(name);
    if (raw === undefined) return devnet ? fallback : undefined;
    if (!/^[0-9]{1,30}$/.test(raw) || BigInt(raw) === 0n) {
      throw new ConfigError(name, "expected a positive whole number of the token's smallest unit");
    }
    return raw;
  };
  const facilitatorUrl = get("X402_FACILITATOR_URL");
  if (facilitatorUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(facilitatorUrl)) {
    throw new ConfigError("X402_FACILITATOR_URL", "expected an http(s) URL");
  }
  const network = get("X402_NETWORK");
  if (network !== undefined && !/^eip155:[1-9][0-9]{0,18}$/.test(network)) {
    throw new ConfigError("X402_NETWORK", "expected a CAIP-2 EVM network such as eip155:8453");
  }
  const settings = {
    facilitatorUrl,
    asset: address("X402_ASSET"),
    assetName: get("X402_ASSET_NAME"),
    assetVersion: get("X402_ASSET_VERSION"),
    network,
    payTo: address("X402_PAY_TO"),
    witnessPrice: price("X402_WITNESS_PRICE", DEVNET_X402_PRICES.witness),
    relayPrice: price("X402_RELAY_PRICE", DEVNET_X402_PRICES.relay),
    paidPlanPrice: price("X402_PAID_PLAN_PRICE", DEVNET_X402_PRICES.paidPlan),
    signingKey: key("X402_SIGNING_KEY"),
    ...readX402Jws(get, devnet),
  };
  const offered = settings.witnessPrice ?? settings.relayPrice ?? settings.paidPlanPrice;
  if (!devnet && offered !== undefined) {
    for (const [name, value] of [["X402_FACILITATOR_URL", facilitatorUrl], ["X402_ASSET", settings.asset], ["X402_PAY_TO", settings.payTo]] as const) {
      if (value === undefined) throw new ConfigError(name, "required when an x402 price is set");
    }
  }
  return settings;
}

/** Reads each role's signer (decisions §27); a role without a URI keeps today's variable as `env:`. */
function readSigners(
  env: Env,
  get: (name: string) => string | undefined,
  int: (name: string, fallback: number, min: number, max: number) => number,
  bool: (name: string, fallback: boolean) => boolean,
  x402Format: "eip712" | "jws",
): SignersConfig {
  const uri = (name: string) => {
    const value = get(name);
    if (value !== undefined && !/^(env|keystore|jsonrpc|pkcs11|awskms):/.test(value)) {
      throw new ConfigError(name, "expected a signer URI: env:, keystore:, jsonrpc:, pkcs11: or awskms: (docs/signing.md)");
    }
    return value;
  };
  const legacy = (name: string) => (get(name) === undefined ? undefined : `env:${name}`);
  const address = (name: string) => {
    const value = get(name);
    if (value !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(value)) throw new ConfigError(name, "expected an address (0x and 40 hex digits)");
    return value;
  };
  const delegate = uri("DELEGATE_SIGNER") ?? legacy("DELEGATE_PRIVATE_KEY");
  const witness = uri("WITNESS_SIGNER") ?? legacy("WITNESS_PRIVATE_KEY") ?? delegate;
  const x402 = uri("X402_SIGNER") ?? (x402Format === "eip712" ? legacy("X402_SIGNING_KEY") ?? witness : legacy("X402_JWS_KEY"));
  return {
    delegate,
    witness,
    x402,
    oauth: uri("OAUTH_SIGNER"),
    addresses: { delegate: address("DELEGATE_ADDRESS"), witness: address("WITNESS_ADDRESS"), x402: address("X402_ADDRESS") },
    timeoutMs: int("SIGNER_TIMEOUT_MS", 5_000, 100, 60_000),
    allowRawKeys: bool("ALLOW_RAW_KEYS", false),
    env,
  };
}

/** `EXPLORER_API_URLS`: `<chainId>=<url>` pairs, comma-separated; an http or https URL each, one per chain. */
function explorerApiUrls(pairs: readonly string[]): ReadonlyMap<number, string> {
  const urls = new Map<number, string>();
  for (const pair of pairs) {
    const match = /^([1-9][0-9]{0,15})=(.+)$/.exec(pair);
    let url: URL | undefined;
    try {
      url = match === null ? undefined : new URL(match[2]!);
    } catch {
      url = undefined;
    }
    if (match === null || url === undefined || (url.protocol !== "https:" && url.protocol !== "http:")) {
      throw new ConfigError("EXPLORER_API_URLS", "expected <chainId>=<http(s) URL> pairs, comma-separated");
    }
    if (urls.has(Number(match[1]))) throw new ConfigError("EXPLORER_API_URLS", `chain ${match[1]} is named twice`);
    urls.set(Number(match[1]), url.href);
  }
  return urls;
}
