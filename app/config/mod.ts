/**
 * The service's configuration, read once from the environment at start, in typed sections, one per capability. Each
 * variable is declared once in its section's file (its name, default, range and description); docs/configuration.md
 * lists them section by section, and `config_docs_test.ts` checks the page against the declarations.
 */
import type { TObject } from "@sinclair/typebox";
import { ConfigError, type Env } from "./_declare.ts";
import { AccountsSection, type AccountsConfig, defaultSiweDomains, readAccounts } from "./accounts.ts";
import { IndexSection, type IndexConfig, readIndex } from "./attestation_index.ts";
import { ChainsSection, type ChainsConfig, readChains, usesDevnet } from "./chains.ts";
import { DiscoverySection, type DiscoveryConfig, readDiscovery } from "./discovery.ts";
import { KeysSection, type KeysConfig, readKeys } from "./keys.ts";
import { McpSection, type McpConfig, readMcp } from "./mcp.ts";
import { OAuthSection, type OAuthConfig, readOAuth } from "./oauth.ts";
import { readRelays, RelaysSection, type RelaysConfig } from "./relays.ts";
import { defaultPublicBaseUrl, readServer, ServerSection, type ServerConfig } from "./server.ts";
import { readSigners, SignersSection, type SignersConfig } from "./signers.ts";
import { readStorage, StorageSection, type StorageConfig } from "./storage.ts";
import { readWebhooks, WebhooksSection, type WebhooksConfig } from "./webhooks.ts";
import { readWidgets, WidgetsSection, type WidgetsConfig } from "./widgets.ts";
import { readX402, X402Section, type X402Config } from "./x402.ts";

export { ConfigError, type Env } from "./_declare.ts";
export { declarations } from "./_declare.ts";
export { attestationChains, type ChainConfig, type ChainRole, type ChainsConfig, confirmationsOf, defaultChain } from "./chains.ts";
export type { AccountsConfig, DiscoveryConfig, IndexConfig, KeysConfig, McpConfig, OAuthConfig, RelaysConfig, ServerConfig, SignersConfig, StorageConfig };
export type { WebhooksConfig, WidgetsConfig, X402Config };
export { DEVNET_X402_PRICES } from "./x402.ts";
export { privateOriginsOf } from "./server.ts";

/** The service's configuration: one section per capability. */
export type Config = {
  readonly server: ServerConfig;
  readonly storage: StorageConfig;
  readonly chains: ChainsConfig;
  readonly signers: SignersConfig;
  readonly relays: RelaysConfig;
  readonly accounts: AccountsConfig;
  readonly discovery: DiscoveryConfig;
  readonly widgets: WidgetsConfig;
  readonly index: IndexConfig;
  readonly keys: KeysConfig;
  readonly x402: X402Config;
  readonly oauth: OAuthConfig;
  readonly mcp: McpConfig;
  readonly webhooks: WebhooksConfig;
};

/** Every section's declarations by its name in `Config`, in the order docs/configuration.md gives them. */
export const CONFIG_SECTIONS: Readonly<Record<keyof Config, TObject>> = {
  server: ServerSection,
  storage: StorageSection,
  chains: ChainsSection,
  signers: SignersSection,
  relays: RelaysSection,
  accounts: AccountsSection,
  keys: KeysSection,
  discovery: DiscoverySection,
  widgets: WidgetsSection,
  index: IndexSection,
  x402: X402Section,
  oauth: OAuthSection,
  webhooks: WebhooksSection,
  mcp: McpSection,
};

/** The most key verdicts (keys × subjects) one `GET /api/private/signing-keys` answer may hold: about 2.5 MB of JSON. */
export const MAX_KEY_VERDICTS_PER_LIST = 20_000;

/**
 * The configuration of a service started with `PORT=0`, once it bound `port` (app/service.ts binds before it builds
 * anything): the defaults that name the port name that one, `PUBLIC_BASE_URL` (the offers' and receipts'
 * `resourceUrl`, the did:web of the service's keys, the OAuth issuer, the service's own origin) and `SIWE_DOMAINS`.
 * Before, they named port 0: a receipt's resourceUrl was `http://127.0.0.1:0/…`. A value set otherwise stays.
 */
export function withBoundPort(config: Config, port: number): Config {
  const was = config.server;
  const publicBaseUrl = was.publicBaseUrl === defaultPublicBaseUrl(was.host, was.port) ? defaultPublicBaseUrl(was.host, port) : was.publicBaseUrl;
  const server = { ...was, port, publicBaseUrl };
  const siwe = config.accounts.siweDomains;
  const defaulted = defaultSiweDomains(was);
  const siweDomains = siwe.length === defaulted.length && siwe.every((d, i) => d === defaulted[i]) ? defaultSiweDomains(server) : siwe;
  return { ...config, server, accounts: { ...config.accounts, siweDomains } };
}

/** Options of `readConfig`: how `CHAINS_FILE` is read (tests give its text). */
export type ReadConfigOptions = { readonly readFile?: ((path: string) => string) | undefined };

/** Reads and validates the configuration from an environment map; a bad value throws a ConfigError naming it. */
export function readConfig(env: Env, options: ReadConfigOptions = {}): Config {
  const sections: Record<string, unknown> = {};
  const ctx = { env, devnet: usesDevnet(env), sections };
  const server = (sections.server = readServer(ctx));
  const storage = readStorage(ctx);
  const chains = readChains(ctx, options.readFile);
  const x402 = readX402(ctx);
  const signers = readSigners(ctx, x402.signingFormat);
  const relays = readRelays(ctx);
  const keys = readKeys(ctx);
  const accounts = readAccounts(ctx);
  if (keys.maxPerAccount * accounts.subjectsPerAccount > MAX_KEY_VERDICTS_PER_LIST) {
    throw new ConfigError(
      "SUBJECTS_PER_ACCOUNT",
      `SIGNING_KEYS_PER_ACCOUNT × SUBJECTS_PER_ACCOUNT (the key verdicts of one signing-key list) must be at most ${MAX_KEY_VERDICTS_PER_LIST}`,
    );
  }
  return {
    server,
    storage,
    chains,
    signers,
    relays,
    accounts,
    discovery: readDiscovery(ctx),
    widgets: readWidgets(ctx),
    index: readIndex(ctx),
    keys,
    x402,
    oauth: readOAuth(ctx),
    mcp: readMcp(ctx),
    webhooks: readWebhooks(ctx),
  };
}
