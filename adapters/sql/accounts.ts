/** What SQLite and PostgreSQL share for the accounts store: its tables (accounts, challenges, sessions, sponsored writes). */
import { UNPROVEN_RELEASES } from "../../ports/submissions.ts";
import type { SqlWords, TableGroup } from "./schema.ts";

/** The unproven causes of a release as a SQL list (`'silence', 'lost'`), for `release_cause IN (…)`. */
export const UNPROVEN_RELEASE_LIST = UNPROVEN_RELEASES.map((cause) => `'${cause}'`).join(", ");

/** Accounts, sign-in challenges, sessions and the sponsored-write quota's rows. */
export function accountTables(w: SqlWords): TableGroup {
  return {
    create: [
      `CREATE TABLE IF NOT EXISTS accounts (
         id TEXT PRIMARY KEY,
         address TEXT NOT NULL UNIQUE,
         plan TEXT NOT NULL,
         created_at_ms ${w.int} NOT NULL,
         updated_at_ms ${w.int} NOT NULL
       )`,
      `CREATE TABLE IF NOT EXISTS challenges (
         id TEXT PRIMARY KEY,
         address TEXT NOT NULL,
         chain_id ${w.int} NOT NULL,
         nonce TEXT NOT NULL,
         message TEXT NOT NULL,
         created_at_ms ${w.int} NOT NULL,
         expires_at_ms ${w.int} NOT NULL,
         used_at_ms ${w.int}
       )`,
      `CREATE INDEX IF NOT EXISTS challenges_expiry ON challenges (expires_at_ms)`,
      `CREATE TABLE IF NOT EXISTS sessions (
         token_hash TEXT PRIMARY KEY,
         account_id TEXT NOT NULL REFERENCES accounts (id),
         created_at_ms ${w.int} NOT NULL,
         expires_at_ms ${w.int} NOT NULL,
         revoked_at_ms ${w.int}
       )`,
      `CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at_ms)`,
      // One row per sponsored write; 'reserved' and 'broadcast' rows count against the quota like
      // 'committed' ones, 'released' rows do not. The transaction hash is stored before broadcast.
      `CREATE TABLE IF NOT EXISTS sponsored_writes (
         id TEXT PRIMARY KEY,
         account_id TEXT NOT NULL REFERENCES accounts (id),
         year INTEGER NOT NULL,
         fingerprint TEXT NOT NULL,
         state TEXT NOT NULL,
         tx_hash TEXT,
         uid TEXT,
         block_number TEXT,
         created_at_ms ${w.int} NOT NULL,
         updated_at_ms ${w.int} NOT NULL
       )`,
      `CREATE INDEX IF NOT EXISTS sponsored_writes_usage ON sponsored_writes (account_id, year, state)`,
      `CREATE INDEX IF NOT EXISTS sponsored_writes_state ON sponsored_writes (state, created_at_ms)`,
    ],
    added: [
      // The stored transaction of a sponsored write (decisions §15).
      ["sponsored_writes", "raw_tx", "TEXT"],
      ["sponsored_writes", "wallet", "TEXT"],
      ["sponsored_writes", "tx_nonce", w.int],
      // The chain a sponsored write is sent on (decisions §30); NULL (rows from before): the default chain.
      ["sponsored_writes", "chain_id", w.int],
      // Accounts and sessions as the accounts API shows them (decisions §12).
      ["accounts", "display_name", "TEXT"],
      ["sessions", "wallet_provider_id", "TEXT"],
      ["sessions", "execution_mode", "TEXT"],
      // Who asked for a sign-in challenge: creations are rate-limited per client and per wallet (decisions §15).
      ["challenges", "client_key", "TEXT"],
      // Why a sponsored write was given back (ports/submissions.ts ReleaseCause); NULL: open, or released before.
      ["sponsored_writes", "release_cause", "TEXT"],
    ],
    after: [
      `CREATE INDEX IF NOT EXISTS challenges_client ON challenges (client_key, created_at_ms)`,
      `CREATE INDEX IF NOT EXISTS challenges_wallet ON challenges (address, created_at_ms)`,
      // Whether a client holds one of a wallet's challenges of the window, and its live cap for the wallet, read one
      // client's rows of it: by this index, a creation's work does not grow with how many other clients asked.
      `CREATE INDEX IF NOT EXISTS challenges_wallet_client ON challenges (address, client_key, created_at_ms)`,
      // The writes given back on an unproven cause within the reconciler's watch, read each round without the others.
      `CREATE INDEX IF NOT EXISTS sponsored_writes_release_cause ON sponsored_writes (release_cause, updated_at_ms)`,
    ],
  };
}
