/** The service's own metrics: their help texts, and the gauges of its wallets, the public relay's budget and open work. */
import type { TransactionSigner } from "../ports/signer.ts";
import type { PrometheusMetrics } from "../adapters/observability/mod.ts";
import { GAS_WINDOW_MS } from "../domain/delegation/mod.ts";
import type { RelaysConfig } from "./config.ts";
import type { ViemEas } from "../adapters/chain/mod.ts";
import type { Storage } from "../ports/storage.ts";
import { systemClock } from "../adapters/system/mod.ts";

/** Types and help texts of the service's metrics. */
export function describeMetrics(metrics: PrometheusMetrics) {
  metrics.describe("ats_http_requests_total", "counter", "HTTP requests by route, method and status");
  metrics.describe("ats_http_request_duration_seconds", "histogram", "HTTP request latency by route and status");
  metrics.describe("ats_rpc_calls_total", "counter", "JSON-RPC calls by method");
  metrics.describe("ats_rpc_failures_total", "counter", "JSON-RPC failures: round trips (network, timeout, http_<status>) and error answers (rpc_error by code and method)");
  metrics.describe("ats_rpc_round_trip_seconds", "histogram", "JSON-RPC HTTP round-trip time");
  metrics.describe("ats_public_relay_refusals_total", "counter", "Public delegated-attest requests the relay guard refused, by reason: client, attester, budget, client_gas, attester_gas (their shares of the budget), disabled");
  metrics.describe("ats_private_relay_refusals_total", "counter", "Private-relay delegated attestations refused by its hourly gas budget (reason budget)");
  metrics.describe("ats_x402_payments_total", "counter", "x402 payments by purpose (witness, relay, plan) and outcome: settled, settle_failed, work_failed, work_unknown, replayed, in_progress");
  metrics.describe("ats_x402_settlement_failures_total", "counter", "x402 payments whose settlement failed after the work succeeded (see ops payments list), by purpose");
  metrics.describe("ats_signatures_total", "counter", "Signatures by role (delegate, witness, x402, oauth), backend (env, keystore, jsonrpc, awskms, pkcs11) and outcome: ok, unavailable, timeout, refused");
  metrics.describe("ats_signature_duration_seconds", "histogram", "Time one signature took, by role and backend (a remote signer's round trip included)");
  metrics.describe("ats_reconcile_rounds_overdue_total", "counter", "Rounds of the submissions' minute of work (a chain's reconciler, the sweep, the pruning) found running one step for 10 minutes (logged reconcile_round_overdue)");
  metrics.describe("ats_reconcile_rounds_abandoned_total", "counter", "Rounds of the submissions' minute of work given up on after one step ran 15 minutes: a new round started (logged reconcile_round_abandoned)");
  metrics.describe("ats_sponsored_writes_total", "counter", "Controller witness requests (sponsored-write quota use) by outcome: committed or the error code, e.g. sponsored_write_limit_exceeded");
}

/** Registers the gauges read at each scrape: the wallets' balances and pending transactions, the relay budget, open work. */
export function wireGauges(
  relays: RelaysConfig,
  { metrics, eas, witnessKey, storage }: { metrics: PrometheusMetrics; eas: ViemEas; witnessKey: `0x${string}` | TransactionSigner | undefined; storage: Storage },
): void {
  const wallets = [
    ...(eas.delegate ? [{ wallet: "delegate", address: eas.delegate.address }] : []),
    ...(witnessKey ? [{ wallet: "witness", address: eas.senderFor(witnessKey).address }] : []),
  ];
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
    const left = relays.publicRelay.gasPerHour - await storage.gasBudget.used(gasWindow());
    return [{ value: left > 0n ? left : 0n }];
  });
  metrics.gauge("ats_private_relay_gas_used", "Gas the private relay charged this hour, all instances", async () =>
    [{ value: await storage.privateGasBudget.used(gasWindow()) }]);
  metrics.gauge("ats_delegated_submissions_open", "Delegated attestations checked, signed or sent but not yet mined or released, all instances", async () =>
    [{ value: (await storage.replay.open(Number.MAX_SAFE_INTEGER)).length }]);
  metrics.gauge("ats_sponsored_writes_unsettled", "Sponsored writes reserved against a quota but not yet committed or released, all instances", async () =>
    [{ value: (await storage.ledger.unsettled(Number.MAX_SAFE_INTEGER)).length }]);
}
