import { describe, expect, test } from "bun:test";
import { ConfigError, readConfig } from "./config.ts";

describe("readConfig()", () => {
  test("defaults to the embedded devnet on 127.0.0.1:8080, testnet setting", () => {
    const config = readConfig({});
    expect(config).toMatchObject({ port: 8080, host: "127.0.0.1", rpcUrl: undefined, activeChain: "testnet" });
    expect(config.subsidizedSchemas).toEqual(["user-review", "linked-identifier"]);
    expect(config.databasePath).toBe(".ats/ats.sqlite");
  });

  test("an unknown NEXT_PUBLIC_ACTIVE_CHAIN stops the server naming the variable", () => {
    expect(() => readConfig({ NEXT_PUBLIC_ACTIVE_CHAIN: "devnet" })).toThrow(ConfigError);
    expect(() => readConfig({ NEXT_PUBLIC_ACTIVE_CHAIN: "devnet" })).toThrow(/NEXT_PUBLIC_ACTIVE_CHAIN/);
    expect(readConfig({ NEXT_PUBLIC_ACTIVE_CHAIN: "omachain-mainnet" }).activeChain).toBe("mainnet");
  });

  test("bad values name their variable", () => {
    expect(() => readConfig({ PORT: "eighty" })).toThrow(/PORT/);
    expect(() => readConfig({ DELEGATE_PRIVATE_KEY: "0x1234" })).toThrow(/DELEGATE_PRIVATE_KEY/);
    expect(() => readConfig({ RPC_URL: "http://127.0.0.1:8545" })).toThrow(/TRUST_ANCHORS_PATH/);
    expect(() => readConfig({ ALLOW_PRIVATE_NETWORK: "maybe" })).toThrow(/ALLOW_PRIVATE_NETWORK/);
  });

  test("the witness key defaults to the delegate key", () => {
    const key = "ab".repeat(32);
    const config = readConfig({ DELEGATE_PRIVATE_KEY: key });
    expect(config.delegatePrivateKey).toBe(`0x${key}`);
    expect(config.witnessPrivateKey).toBe(`0x${key}`);
  });
});
