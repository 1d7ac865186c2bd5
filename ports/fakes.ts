import type { Clock } from "./clock.ts";
import type { DelegatedAttestCall, DelegateSubmitter, EasReader, HexString, Simulation, Submission } from "./eas.ts";
import type { ClaimOutcome, ReplayClaim, ReplayFinal, ReplayStore } from "./replay_store.ts";

/** A clock that stands still until told otherwise. */
export function fakeClock(startMs = 1_800_000_000_000): Clock & { set: (ms: number) => void } {
  let now = startMs;
  return { nowMs: () => now, set: (ms) => void (now = ms) };
}

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
export function fakeDelegate(options: { simulation?: Simulation; submission?: Submission } = {}) {
  const sent: DelegatedAttestCall[] = [];
  let counter = 0;
  const delegate = {
    address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as HexString,
    sent,
    simulations: 0,
    simulation: options.simulation ?? { ok: true as const, gas: 200_000n },
    submission: options.submission,
    simulate(_call: DelegatedAttestCall) {
      delegate.simulations++;
      return Promise.resolve(delegate.simulation);
    },
    async submit(call: DelegatedAttestCall, opts: { onSigned: (h: HexString) => Promise<void> }) {
      counter++;
      const txHash = `0x${counter.toString(16).padStart(64, "a")}` as HexString;
      await opts.onSigned(txHash);
      sent.push(call);
      if (delegate.submission) return delegate.submission;
      return { ok: true as const, txHash, blockNumber: BigInt(counter), uid: `0x${counter.toString(16).padStart(64, "b")}` as HexString };
    },
  };
  return delegate satisfies DelegateSubmitter;
}

/** An in-memory replay store with the same rules as the SQLite one. */
export function fakeReplayStore() {
  const rows = new Map<string, ReplayClaim & { state: string; txHash?: string }>();
  const store = {
    rows,
    has: (key: string) => Promise.resolve(rows.has(key)),
    claim(claim: ReplayClaim): Promise<ClaimOutcome> {
      if (rows.has(claim.key)) return Promise.resolve("duplicate-signature");
      for (const row of rows.values()) {
        if (
          row.chainId === claim.chainId && row.attester === claim.attester && row.nonce === claim.nonce &&
          row.state !== "failed"
        ) return Promise.resolve("nonce-in-flight");
      }
      rows.set(claim.key, { ...claim, state: "claimed" });
      return Promise.resolve("claimed");
    },
    markBroadcast(key: string, txHash: string) {
      const row = rows.get(key);
      if (row) rows.set(key, { ...row, state: "broadcast", txHash });
      return Promise.resolve();
    },
    finish(key: string, final: ReplayFinal) {
      const row = rows.get(key);
      if (row) rows.set(key, { ...row, state: final.state, txHash: final.txHash });
      return Promise.resolve();
    },
    release(key: string) {
      rows.delete(key);
      return Promise.resolve();
    },
    prune(nowSeconds: bigint) {
      let n = 0;
      for (const [k, row] of rows) if (row.deadline < nowSeconds) rows.delete(k), n++;
      return Promise.resolve(n);
    },
  };
  return store satisfies ReplayStore;
}

/** A DNS resolver answering from a table; unknown names are NXDOMAIN. Counts lookups. */
export function fakeDnsResolver(
  txt: Record<string, import("./discovery.ts").TxtLookup> = {},
  addresses: Record<string, import("./discovery.ts").AddressLookup> = {},
) {
  const resolver = {
    txt,
    addresses,
    lookups: [] as string[],
    resolveTxt(name: string) {
      resolver.lookups.push(`TXT ${name}`);
      return Promise.resolve(txt[name] ?? { status: "nxdomain" as const });
    },
    resolveAddresses(host: string) {
      resolver.lookups.push(`A ${host}`);
      return Promise.resolve(addresses[host] ?? { status: "nxdomain" as const });
    },
  };
  return resolver satisfies import("./discovery.ts").DnsResolver;
}

/** A did.json fetcher answering from a table keyed by host; unknown hosts are 404. */
export function fakeDidDocumentFetcher(answers: Record<string, import("./discovery.ts").DidDocumentFetch> = {}) {
  const fetcher = {
    answers,
    fetches: [] as string[],
    fetchDidDocument(host: string, path: readonly string[] = []) {
      fetcher.fetches.push([host, ...path].join("/"));
      return Promise.resolve(answers[host] ?? { status: "not-found" as const, url: `https://${host}/.well-known/did.json` });
    },
  };
  return fetcher satisfies import("./discovery.ts").DidDocumentFetcher;
}
