import type { BatchSubmission, DelegatedAttestCall, DelegateSubmitter, EasReader, FundsCheck, HexString, Simulation, Submission, SubmitOptions } from "../eas.ts";
import { fakeSignedTx } from "./_signed_tx.ts";

/** An EAS reader with settable nonces; counts its calls. */
export function fakeEasReader(options: { chainId?: number; easAddress?: HexString; failing?: boolean } = {}) {
  const nonces = new Map<string, bigint>();
  const reader = {
    chainId: options.chainId ?? 31337,
    easAddress: options.easAddress ?? ("0x5FbDB2315678afecb367f032d93F642f64180aa3" as HexString),
    calls: 0,
    failing: options.failing ?? false,
    nonces,
    getAttesterNonce(attester: HexString) {
      reader.calls++;
      if (reader.failing) return Promise.resolve({ ok: false as const, reason: "rpc-error" as const });
      return Promise.resolve({ ok: true as const, nonce: nonces.get(attester.toLowerCase()) ?? 0n });
    },
  };
  return reader satisfies EasReader;
}

/** A delegate wallet that records what it was asked to send. */
export function fakeDelegate(options: { simulation?: Simulation; submission?: Submission; funds?: FundsCheck } = {}) {
  const sent: DelegatedAttestCall[] = [];
  let counter = 0;
  const delegate = {
    address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as HexString,
    sent,
    simulations: 0,
    funds: options.funds ?? ("ok" as FundsCheck),
    simulation: options.simulation ?? { ok: true as const, gas: 200_000n },
    submission: options.submission,
    checkFunds: () => Promise.resolve(delegate.funds),
    simulate(_call: DelegatedAttestCall) {
      delegate.simulations++;
      return Promise.resolve(delegate.simulation);
    },
    /**
     * The wallet's lock: awaited before anything is signed, as a real sender waits behind the wallet's other sends
     * (a test holds it, or moves its clock there). Then `stillValid` is asked, as the real sender asks it.
     */
    lock: undefined as (() => Promise<void>) | undefined,
    /** How often a submission's `stillValid` said no: nothing signed or sent. */
    expired: 0,
    async submit(call: DelegatedAttestCall, opts: SubmitOptions): Promise<Submission> {
      await delegate.lock?.();
      if (opts.stillValid?.() === false) {
        delegate.expired++;
        return { ok: false, reason: "expired" };
      }
      // The wallet's nonce or fees not read, or its shared nonce not taken: nothing signed or sent, as the real sender.
      if (delegate.submission?.ok === false && (delegate.submission.reason === "rpc-error" || delegate.submission.reason === "nonce-unavailable")) return delegate.submission;
      counter++;
      const tx = fakeSignedTx(delegate.address, counter, "a");
      try {
        await opts.onSigned(tx);
      } catch {
        return { ok: false, reason: "not-broadcast" };
      }
      if (delegate.submission?.ok === false && delegate.submission.reason === "not-broadcast") return delegate.submission;
      await opts.onSent(tx.txHash);
      sent.push(call);
      if (delegate.submission) return delegate.submission;
      return { ok: true, txHash: tx.txHash, blockNumber: BigInt(counter), uid: `0x${counter.toString(16).padStart(64, "b")}` as HexString };
    },
    /** The batches sent (`multiAttestByDelegation`), each its calls in order. */
    batches: [] as DelegatedAttestCall[][],
    batchSimulations: 0,
    /** A call EAS would revert in a batch: the error's name; the whole batch then reverts in simulation. */
    revertsInBatch: undefined as ((call: DelegatedAttestCall) => string | undefined) | undefined,
    /** A block's gas: a batch needing more is "too-much-gas", as a node's estimate says it. */
    blockGasLimit: undefined as bigint | undefined,
    /** What one call of a batch costs (default 100,000); the batch 50,000 more. */
    callGas: (_call: DelegatedAttestCall): bigint => 100_000n,
    /** The cap each batch simulation was given (`maxGas`), in order. */
    batchCaps: [] as (bigint | undefined)[],
    simulateBatch(calls: readonly DelegatedAttestCall[], options: { readonly maxGas?: bigint | undefined } = {}): Promise<Simulation> {
      delegate.batchSimulations++;
      delegate.batchCaps.push(options.maxGas);
      const reverting = calls.map((call) => delegate.revertsInBatch?.(call)).find((name) => name !== undefined);
      if (reverting !== undefined) return Promise.resolve({ ok: false, reason: "reverted", errorName: reverting });
      if (!delegate.simulation.ok) return Promise.resolve(delegate.simulation);
      const gas = calls.reduce((sum, call) => sum + delegate.callGas(call), 50_000n);
      if (delegate.blockGasLimit !== undefined && gas > delegate.blockGasLimit) return Promise.resolve({ ok: false, reason: "too-much-gas" });
      // As a node's estimate: no gas up to the cap runs the call through.
      if (options.maxGas !== undefined && gas > options.maxGas) return Promise.resolve({ ok: false, reason: "too-much-gas" });
      return Promise.resolve({ ok: true, gas });
    },
    async submitBatch(calls: readonly DelegatedAttestCall[], opts: SubmitOptions): Promise<BatchSubmission> {
      await delegate.lock?.();
      if (opts.stillValid?.() === false) {
        delegate.expired++;
        return { ok: false, reason: "expired" };
      }
      // The wallet's nonce or fees not read, or its shared nonce not taken: nothing signed or sent, as the real sender.
      if (delegate.submission?.ok === false && (delegate.submission.reason === "rpc-error" || delegate.submission.reason === "nonce-unavailable")) return delegate.submission;
      counter++;
      const tx = fakeSignedTx(delegate.address, counter, "c");
      try {
        await opts.onSigned(tx);
      } catch {
        return { ok: false, reason: "not-broadcast" };
      }
      if (delegate.submission?.ok === false && delegate.submission.reason === "not-broadcast") return delegate.submission;
      await opts.onSent(tx.txHash);
      delegate.batches.push([...calls]);
      if (delegate.submission?.ok === false) return delegate.submission;
      const uids = calls.map((_, i) => `0x${counter.toString(16).padStart(4, "0")}${i.toString(16).padStart(60, "d")}` as HexString);
      return { ok: true, txHash: tx.txHash, blockNumber: BigInt(counter), uids };
    },
  };
  return delegate satisfies DelegateSubmitter;
}
