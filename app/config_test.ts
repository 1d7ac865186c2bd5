import { describe, expect, test } from "bun:test";
import { ConfigError, privateOriginsOf, readConfig, withBoundPort } from "./config.ts";

describe("readConfig()", () => {
  test("defaults to the embedded devnet on 127.0.0.1:8080, testnet setting", () => {
    const config = readConfig({});
    expect(config.server).toMatchObject({ port: 8080, host: "127.0.0.1" });
    expect(config.chains).toMatchObject({ default: "eip155:31337", activeChain: "testnet", devnetChains: 1 });
    expect(config.chains.list).toEqual([{ caip2: "eip155:31337", chainId: 31337, rpcUrl: undefined, wsUrl: undefined, startBlock: undefined, confirmations: undefined, role: "attestations" }]);
    expect(config.relays.subsidizedSchemas).toEqual(["user-review", "linked-identifier"]);
    expect(config.storage.databasePath).toBe(".ats/ats.sqlite");
  });

  test("an unknown NEXT_PUBLIC_ACTIVE_CHAIN stops the server naming the variable", () => {
    expect(() => readConfig({ NEXT_PUBLIC_ACTIVE_CHAIN: "devnet" })).toThrow(ConfigError);
    expect(() => readConfig({ NEXT_PUBLIC_ACTIVE_CHAIN: "devnet" })).toThrow(/NEXT_PUBLIC_ACTIVE_CHAIN/);
    expect(readConfig({ NEXT_PUBLIC_ACTIVE_CHAIN: "omachain-mainnet" }).chains.activeChain).toBe("mainnet");
  });

  test("bad values name their variable", () => {
    expect(() => readConfig({ PORT: "eighty" })).toThrow(/PORT/);
    expect(() => readConfig({ DELEGATE_PRIVATE_KEY: "0x1234" })).toThrow(/DELEGATE_PRIVATE_KEY/);
    expect(() => readConfig({ RPC_URL: "http://127.0.0.1:8545" })).toThrow(/TRUST_ANCHORS_PATH/);
    expect(() => readConfig({ ALLOW_PRIVATE_NETWORK: "maybe" })).toThrow(/ALLOW_PRIVATE_NETWORK/);
  });

  test("STORAGE=postgres (the compose file, the Kubernetes manifests) without DATABASE_URL stops the start naming it", () => {
    expect(() => readConfig({ STORAGE: "postgres" })).toThrow("DATABASE_URL: required when STORAGE is postgres");
    expect(() => readConfig({ STORAGE: "postgres", DATABASE_URL: " " })).toThrow(/DATABASE_URL/);
    expect(readConfig({ STORAGE: "postgres", DATABASE_URL: "postgres://ats@db/ats" }).storage.databaseUrl).toBe("postgres://ats@db/ats");
    expect(() => readConfig({ STORAGE: "sqlite", DATABASE_URL: "postgres://ats@db/ats" })).toThrow(/DATABASE_URL/);
    expect(readConfig({ STORAGE: "sqlite" }).storage.databaseUrl).toBeUndefined();
    expect(() => readConfig({ STORAGE: "mysql" })).toThrow(/STORAGE/);
  });

  test("webhooks (decisions §22): the defaults, and bad values name their variable", () => {
    expect(readConfig({}).webhooks).toEqual({
      enabled: true,
      delivery: true,
      confirmations: undefined,
      retrySeconds: [5, 300, 1800, 7200, 18000, 36000, 36000],
      maxInFlight: 32,
      maxInFlightPerAccount: 8,
      pollMs: 500,
    });
    // Issue 43: an account's share follows the instance's slots (a quarter, at least two endpoints' 8) unless set.
    expect(readConfig({ WEBHOOK_MAX_IN_FLIGHT: "8" }).webhooks.maxInFlightPerAccount).toBe(8);
    expect(readConfig({ WEBHOOK_MAX_IN_FLIGHT: "100" }).webhooks.maxInFlightPerAccount).toBe(25);
    expect(readConfig({ WEBHOOK_MAX_IN_FLIGHT: "100", WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT: "10" }).webhooks.maxInFlightPerAccount).toBe(10);
    expect(() => readConfig({ WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT: "0" })).toThrow(/WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT/);
    expect(readConfig({ WEBHOOK_RETRY_SECONDS: "1, 2", WEBHOOK_CONFIRMATIONS: "3" }).webhooks).toMatchObject({ retrySeconds: [1, 2], confirmations: 3 });
    expect(() => readConfig({ WEBHOOK_RETRY_SECONDS: "5,soon" })).toThrow(/WEBHOOK_RETRY_SECONDS/);
    expect(() => readConfig({ WEBHOOK_MAX_IN_FLIGHT: "0" })).toThrow(/WEBHOOK_MAX_IN_FLIGHT/);
    expect(() => readConfig({ WEBHOOK_CONFIRMATIONS: "-1" })).toThrow(/WEBHOOK_CONFIRMATIONS/);
    expect(() => readConfig({ WEBHOOK_DELIVERY: "sometimes" })).toThrow(/WEBHOOK_DELIVERY/);
  });

  test("BODY_TIMEOUT_MS and SHUTDOWN_GRACE_MS: 10 s and 20 s by default (the grace under the common 30 s), bounded", () => {
    const config = readConfig({});
    expect({ body: config.server.bodyTimeoutMs, grace: config.server.shutdownGraceMs }).toEqual({ body: 10_000, grace: 20_000 });
    expect(readConfig({ BODY_TIMEOUT_MS: "300", SHUTDOWN_GRACE_MS: "0" }).server).toMatchObject({ bodyTimeoutMs: 300, shutdownGraceMs: 0 });
    expect(() => readConfig({ BODY_TIMEOUT_MS: "60001" })).toThrow(/BODY_TIMEOUT_MS/);
    expect(() => readConfig({ BODY_TIMEOUT_MS: "99" })).toThrow(/BODY_TIMEOUT_MS/);
    expect(() => readConfig({ SHUTDOWN_GRACE_MS: "120001" })).toThrow(/SHUTDOWN_GRACE_MS/);
    // SHUTDOWN_DELAY_MS is the first part of the grace: none by default, and less than the grace.
    expect(readConfig({}).server.shutdownDelayMs).toBe(0);
    expect(readConfig({ SHUTDOWN_DELAY_MS: "6000" }).server.shutdownDelayMs).toBe(6_000);
    expect(() => readConfig({ SHUTDOWN_DELAY_MS: "20000" })).toThrow(/^SHUTDOWN_DELAY_MS: must be less than SHUTDOWN_GRACE_MS/);
  });

  test("RPC_SEND_SYNC is auto unless off; anything else names the variable", () => {
    expect(readConfig({}).chains.rpcSendSync).toBe("auto");
    expect(readConfig({ RPC_SEND_SYNC: "auto" }).chains.rpcSendSync).toBe("auto");
    expect(readConfig({ RPC_SEND_SYNC: "off" }).chains.rpcSendSync).toBe("off");
    expect(() => readConfig({ RPC_SEND_SYNC: "on" })).toThrow(/RPC_SEND_SYNC/);
  });

  test("the witness key defaults to the delegate key", () => {
    const key = "ab".repeat(32);
    const config = readConfig({ DELEGATE_PRIVATE_KEY: key });
    expect(config.signers.delegatePrivateKey).toBe(`0x${key}`);
    expect(config.signers.witnessPrivateKey).toBe(`0x${key}`);
  });

  test("private networks are refused unless ALLOW_PRIVATE_NETWORK says otherwise", () => {
    expect(readConfig({}).discovery.allowPrivateNetwork).toBe(false);
    expect(readConfig({ ALLOW_PRIVATE_NETWORK: "true" }).discovery.allowPrivateNetwork).toBe(true);
  });

  test("DISCOVERY_DOMAIN_RATE_PER_MINUTE defaults to 30 and must be at least 1", () => {
    expect(readConfig({}).discovery.discoveryDomainPerMinute).toBe(30);
    expect(readConfig({ DISCOVERY_DOMAIN_RATE_PER_MINUTE: "5" }).discovery.discoveryDomainPerMinute).toBe(5);
    expect(() => readConfig({ DISCOVERY_DOMAIN_RATE_PER_MINUTE: "0" })).toThrow(/DISCOVERY_DOMAIN_RATE_PER_MINUTE/);
    expect(() => readConfig({ DISCOVERY_DOMAIN_RATE_PER_MINUTE: "lots" })).toThrow(/DISCOVERY_DOMAIN_RATE_PER_MINUTE/);
  });

  test("SIWE_DOMAINS defaults to PUBLIC_BASE_URL's host (the console's page) and the listening address", () => {
    expect(readConfig({}).accounts.siweDomains).toEqual(["127.0.0.1:8080", "localhost:8080"]);
    expect(readConfig({ PUBLIC_BASE_URL: "https://ats.example.com" }).accounts.siweDomains).toEqual(["ats.example.com", "127.0.0.1:8080", "localhost:8080"]);
    expect(readConfig({ PUBLIC_BASE_URL: "https://ats.example.com", SIWE_DOMAINS: "app.example" }).accounts.siweDomains).toEqual(["app.example"]);
  });

  test("SIWE_CHALLENGE_RATE_PER_MINUTE defaults to 10 and must be a whole number from 1 to 10000", () => {
    expect(readConfig({}).accounts.siweChallengePerMinute).toBe(10);
    expect(readConfig({ SIWE_CHALLENGE_RATE_PER_MINUTE: "120" }).accounts.siweChallengePerMinute).toBe(120);
    for (const bad of ["0", "10001", "ten", "1.5", "-3"]) {
      expect(() => readConfig({ SIWE_CHALLENGE_RATE_PER_MINUTE: bad })).toThrow(/SIWE_CHALLENGE_RATE_PER_MINUTE/);
    }
  });

  test("premium reads: 100 and 100,000 a year, log ranges of 50,000 blocks; bad values name the variable", () => {
    expect(readConfig({}).accounts.premiumReads).toEqual({ free: 100, paid: 100_000, maxLogRange: 50_000 });
    expect(readConfig({ FREE_PLAN_ANNUAL_PREMIUM_READS: "5", PAID_PLAN_ANNUAL_PREMIUM_READS: "0", PREMIUM_RPC_MAX_LOG_RANGE: "1" }).accounts.premiumReads)
      .toEqual({ free: 5, paid: 0, maxLogRange: 1 });
    for (const [name, bad] of [
      ["FREE_PLAN_ANNUAL_PREMIUM_READS", "-1"], ["FREE_PLAN_ANNUAL_PREMIUM_READS", "many"], ["PAID_PLAN_ANNUAL_PREMIUM_READS", "1e5"],
      ["PAID_PLAN_ANNUAL_PREMIUM_READS", "2.5"], ["PREMIUM_RPC_MAX_LOG_RANGE", "0"], ["PREMIUM_RPC_MAX_LOG_RANGE", "0x10"],
      ["PREMIUM_RPC_MAX_LOG_RANGE", "99999999999999999999"],
    ] as const) {
      expect(() => readConfig({ [name]: bad })).toThrow(new RegExp(name));
    }
  });

  test("the premium proxy's bounds (issue 23): gas cap, timeout, requests in flight; bad values name the variable", () => {
    expect(readConfig({}).accounts.premiumRpc).toEqual({ maxCallGas: 30_000_000, timeoutMs: 10_000, maxInFlightPerAccount: 4, maxInFlight: 16 });
    expect(readConfig({
      PREMIUM_RPC_MAX_CALL_GAS: "100000", PREMIUM_RPC_TIMEOUT_MS: "500", PREMIUM_RPC_MAX_IN_FLIGHT_PER_ACCOUNT: "1", PREMIUM_RPC_MAX_IN_FLIGHT: "2",
    }).accounts.premiumRpc).toEqual({ maxCallGas: 100_000, timeoutMs: 500, maxInFlightPerAccount: 1, maxInFlight: 2 });
    for (const [name, bad] of [
      ["PREMIUM_RPC_MAX_CALL_GAS", "20999"], ["PREMIUM_RPC_MAX_CALL_GAS", "0xffffffffffff"], ["PREMIUM_RPC_MAX_CALL_GAS", "1000000001"],
      ["PREMIUM_RPC_TIMEOUT_MS", "0"], ["PREMIUM_RPC_TIMEOUT_MS", "1s"], ["PREMIUM_RPC_MAX_IN_FLIGHT_PER_ACCOUNT", "0"], ["PREMIUM_RPC_MAX_IN_FLIGHT", "-1"],
    ] as const) {
      expect(() => readConfig({ [name]: bad })).toThrow(new RegExp(name));
    }
  });

  test("the private relay's hourly gas budget (issue 23): 50,000,000 by default; a bad value names the variable", () => {
    expect(readConfig({}).relays.privateRelay.gasPerHour).toBe(50_000_000n);
    expect(readConfig({ PRIVATE_RELAY_GAS_BUDGET_PER_HOUR: "2000000" }).relays.privateRelay.gasPerHour).toBe(2_000_000n);
    for (const bad of ["0", "-1", "lots"]) expect(() => readConfig({ PRIVATE_RELAY_GAS_BUDGET_PER_HOUR: bad })).toThrow(/PRIVATE_RELAY_GAS_BUDGET_PER_HOUR/);
  });

  test("the public relay's settings and TRUST_PROXY have their defaults and refuse bad values, naming the variable", () => {
    expect(readConfig({}).relays.publicRelay).toEqual({
      enabled: true,
      ipPerMinute: 30,
      noncePerMinute: 120,
      attesterPerHour: 20,
      gasPerHour: 50_000_000n,
      // Issue 43: PUBLIC_RELAY_MAX_GAS_PER_TX bounds a public request; a client's and an attester's share is a tenth of the hour.
      maxGasPerTx: 3_000_000,
      clientGasPerHour: 5_000_000n,
      attesterGasPerHour: 5_000_000n,
    });
    // A small budget still leaves a share room for one request of the most gas allowed.
    expect(readConfig({ PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: "20000000" }).relays.publicRelay).toMatchObject({ clientGasPerHour: 3_000_000n, attesterGasPerHour: 3_000_000n });
    expect(readConfig({ PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: "2000000" }).relays.publicRelay).toMatchObject({ clientGasPerHour: 2_000_000n });
    expect(readConfig({ PUBLIC_RELAY_MAX_GAS_PER_TX: "800000", MAX_GAS_PER_TX: "900000" })).toMatchObject({ relays: { publicRelay: { maxGasPerTx: 800_000 }, privateRelay: { maxGasPerTx: 900_000 } } });
    expect(readConfig({ PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR: "700000" }).relays.publicRelay.clientGasPerHour).toBe(700_000n);
    expect(readConfig({}).server.trustProxy).toBe(0);
    expect(readConfig({ PUBLIC_RELAY: "off", TRUST_PROXY: "2" })).toMatchObject({ relays: { publicRelay: { enabled: false } }, server: { trustProxy: 2 } });
    for (const [name, bad] of [["PUBLIC_RELAY", "maybe"], ["PUBLIC_RELAY_IP_RATE_PER_MINUTE", "0"], ["PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR", "x"], ["PUBLIC_RELAY_GAS_BUDGET_PER_HOUR", "-1"], ["TRUST_PROXY", "17"], ["PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR", "0"], ["PUBLIC_RELAY_GAS_PER_ATTESTER_PER_HOUR", "x"], ["PUBLIC_RELAY_MAX_GAS_PER_TX", "20000"]] as const) {
      expect(() => readConfig({ [name]: bad })).toThrow(new RegExp(name));
    }
  });

  test("the index settings: defaults, and INDEX_CONFIRMATIONS left to the chain kind when unset", () => {
    expect(readConfig({}).index).toEqual({ pollMs: 1_000, stallSeconds: 120, behindGraceSeconds: 30, leaseSeconds: 15, stepBlocks: 10_000, follow: true, answerCacheMb: 32, headReuseMs: 100, queryPerMinute: 300 });
    expect(readConfig({ INDEX_FOLLOW: "false" }).index).toMatchObject({ follow: false });
    expect(readConfig({ INDEX_CONFIRMATIONS: "0" }).chains.list[0]!.confirmations).toBe(0);
    expect(readConfig({ INDEX_ANSWER_CACHE_MB: "0" }).index.answerCacheMb).toBe(0);
    expect(readConfig({ RPC_WS_URL: "wss://node.example/ws" }).chains.list[0]!.wsUrl).toBe("wss://node.example/ws");
    for (const [name, bad] of [["INDEX_POLL_MS", "10"], ["INDEX_LEASE_SECONDS", "0"], ["INDEX_STEP_BLOCKS", "x"], ["INDEX_FOLLOW", "sometimes"], ["INDEX_ANSWER_CACHE_MB", "-1"], ["RPC_WS_URL", "https://node.example"]] as const) {
      expect(() => readConfig({ [name]: bad })).toThrow(new RegExp(name));
    }
  });

  test("DISCOVERY_CACHE_SECONDS defaults to 60; 0 turns the cache off; more than an hour is refused", () => {
    expect(readConfig({}).discovery.discoveryCacheSeconds).toBe(60);
    expect(readConfig({ DISCOVERY_CACHE_SECONDS: "0" }).discovery.discoveryCacheSeconds).toBe(0);
    expect(() => readConfig({ DISCOVERY_CACHE_SECONDS: "3601" })).toThrow(/DISCOVERY_CACHE_SECONDS/);
    expect(() => readConfig({ DISCOVERY_CACHE_SECONDS: "-1" })).toThrow(/DISCOVERY_CACHE_SECONDS/);
  });

  test("x402: the devnet offers its default prices; a real chain offers nothing until a price is set, and then needs the facilitator, asset and payTo", () => {
    expect(readConfig({}).x402).toMatchObject({ witnessPrice: "10000", relayPrice: "5000", paidPlanPrice: "1000000", facilitatorUrl: undefined });
    const chain = { RPC_URL: "http://127.0.0.1:8545", TRUST_ANCHORS_PATH: "/tmp/anchors.json" };
    expect(readConfig(chain).x402).toMatchObject({ witnessPrice: undefined, relayPrice: undefined, paidPlanPrice: undefined });
    expect(() => readConfig({ ...chain, X402_WITNESS_PRICE: "10000" })).toThrow(/X402_FACILITATOR_URL/);
    const full = {
      ...chain,
      X402_WITNESS_PRICE: "10000",
      X402_FACILITATOR_URL: "https://facilitator.example",
      X402_ASSET: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      X402_PAY_TO: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
      X402_NETWORK: "eip155:8453",
    };
    expect(readConfig(full).x402).toMatchObject({ witnessPrice: "10000", relayPrice: undefined, network: "eip155:8453", asset: full.X402_ASSET });
    expect(() => readConfig({ ...full, X402_PAY_TO: "alice" })).toThrow(/X402_PAY_TO/);
    expect(() => readConfig({ ...full, X402_RELAY_PRICE: "0" })).toThrow(/X402_RELAY_PRICE/);
    expect(() => readConfig({ ...full, X402_PAID_PLAN_PRICE: "1.5" })).toThrow(/X402_PAID_PLAN_PRICE/);
    expect(() => readConfig({ ...full, X402_NETWORK: "base" })).toThrow(/X402_NETWORK/);
    expect(() => readConfig({ ...full, X402_FACILITATOR_URL: "ftp://x" })).toThrow(/X402_FACILITATOR_URL/);
  });

  test("SUBJECTS_PER_ACCOUNT (issue 33): default 20, 1 to 1000; keys × subjects (the verdicts of one signing-key list) at most 20,000", () => {
    expect(readConfig({}).accounts.subjectsPerAccount).toBe(20);
    expect(readConfig({ SUBJECTS_PER_ACCOUNT: "5" }).accounts.subjectsPerAccount).toBe(5);
    for (const bad of ["0", "1001", "many", "-1"]) expect(() => readConfig({ SUBJECTS_PER_ACCOUNT: bad })).toThrow(/SUBJECTS_PER_ACCOUNT/);
    expect(readConfig({ SUBJECTS_PER_ACCOUNT: "200", SIGNING_KEYS_PER_ACCOUNT: "100" }).accounts.subjectsPerAccount).toBe(200);
    expect(() => readConfig({ SUBJECTS_PER_ACCOUNT: "201", SIGNING_KEYS_PER_ACCOUNT: "100" })).toThrow(/SIGNING_KEYS_PER_ACCOUNT × SUBJECTS_PER_ACCOUNT/);
    expect(() => readConfig({ SIGNING_KEYS_PER_ACCOUNT: "100000" })).toThrow(/at most 20000/);
  });
});

describe("withBoundPort()", () => {
  test("PORT=0 once bound: the defaults that name the port name the one bound; values set otherwise stay", () => {
    const bound = withBoundPort(readConfig({ PORT: "0" }), 41234);
    expect(bound.server).toMatchObject({ port: 41234, publicBaseUrl: "http://127.0.0.1:41234" });
    expect(bound.accounts.siweDomains).toEqual(["127.0.0.1:41234", "localhost:41234"]);
    const v6 = withBoundPort(readConfig({ PORT: "0", HOST: "::1" }), 41234);
    expect(v6.server.publicBaseUrl).toBe("http://[::1]:41234");
    const named = withBoundPort(readConfig({ PORT: "0", PUBLIC_BASE_URL: "https://ats.example.com" }), 41234);
    expect(named.server.publicBaseUrl).toBe("https://ats.example.com");
    expect(named.accounts.siweDomains).toEqual(["ats.example.com", "127.0.0.1:41234", "localhost:41234"]);
    const listed = withBoundPort(readConfig({ PORT: "0", SIWE_DOMAINS: "app.example" }), 41234);
    expect(listed.accounts.siweDomains).toEqual(["app.example"]);
  });
});

describe("privateOriginsOf()", () => {
  test("the private routes' origins: the public origin and CORS_ORIGINS; without PUBLIC_BASE_URL also http://localhost:PORT, which SIWE_DOMAINS' default names", () => {
    expect(privateOriginsOf(readConfig({}).server)).toEqual(["http://127.0.0.1:8080", "http://localhost:8080"]);
    expect(privateOriginsOf(readConfig({ CORS_ORIGINS: "https://app.example" }).server)).toEqual(["http://127.0.0.1:8080", "http://localhost:8080", "https://app.example"]);
    expect(privateOriginsOf(withBoundPort(readConfig({ PORT: "0" }), 41234).server)).toEqual(["http://127.0.0.1:41234", "http://localhost:41234"]);
    // PUBLIC_BASE_URL set: nothing more than before (its origin and CORS_ORIGINS).
    expect(privateOriginsOf(readConfig({ PUBLIC_BASE_URL: "https://ats.example.com" }).server)).toEqual(["https://ats.example.com"]);
    expect(privateOriginsOf(readConfig({ PUBLIC_BASE_URL: "https://ats.example.com", CORS_ORIGINS: "https://app.example" }).server)).toEqual(["https://ats.example.com", "https://app.example"]);
  });
});
