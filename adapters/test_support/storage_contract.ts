/**
 * The behaviour every storage adapter must have, as one test suite run against each (SQLite and
 * PostgreSQL): replay records, challenges, accounts, sessions and the sponsored-write quota.
 */
import { describe } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { replayStoreContract } from "./replay_store_contract.ts";
import { txReplacementsContract } from "./tx_replacements_contract.ts";
import { challengesContract } from "./challenges_contract.ts";
import { rateCounterContract } from "./rate_counter_contract.ts";
import { mcpSessionsContract } from "./mcp_sessions_contract.ts";
import { accountsContract } from "./accounts_contract.ts";
import { subjectsContract } from "./subjects_contract.ts";
import { signingKeysContract } from "./signing_keys_contract.ts";
import { factoryCallsContract } from "./factory_calls_contract.ts";
import { walletRefusalsContract } from "./wallet_refusals_contract.ts";
import { writeLedgerContract } from "./write_ledger_contract.ts";
import { paymentsContract } from "./payments_contract.ts";
import { attestationIndexContract } from "./attestation_index_contract.ts";
import { indexQueryContract } from "./index_query_contract.ts";
import { idempotencyContract } from "./idempotency_contract.ts";
import { submissionRecordsContract } from "./submission_records_contract.ts";

/** Registers the contract tests; `open` gives a storage whose tables exist (they may hold other tests' rows). */
export function storageContract(name: string, open: () => Promise<Storage>, options: { skip?: string | undefined } = {}) {
  describe.skipIf(options.skip !== undefined)(`storage contract: ${name}${options.skip ? ` (skipped: ${options.skip})` : ""}`, () => {
    replayStoreContract(open);
    txReplacementsContract(open);
    challengesContract(open);
    rateCounterContract(open);
    mcpSessionsContract(open);
    accountsContract(open);
    subjectsContract(open);
    signingKeysContract(open);
    factoryCallsContract(open);
    walletRefusalsContract(open);
    writeLedgerContract(open);
    paymentsContract(open);
    attestationIndexContract(open);
    indexQueryContract(open);
    idempotencyContract(open);
    submissionRecordsContract(open);
  });
}
