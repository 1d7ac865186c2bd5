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

/** The methods of an attestation index, for {@link fakeAttestationIndex}'s failure switch. */
type IndexMethod = "latestBlock" | "schemaRecords" | "attestedUids" | "attestations";

/**
 * An attestation index over in-memory attestations, honouring recipients, schemas and block ranges.
 * Counts calls, records the block of every read, and fails a call when `failWhen(method, n)` says so
 * (`n` counts that method's calls from 1).
 */
export function fakeAttestationIndex(options: { chainId?: number; easAddress?: HexString; head?: bigint } = {}) {
  type Entry = { attestation: import("./attestation_index.ts").IndexedAttestation; block: bigint };
  const calls: Record<IndexMethod, number> = { latestBlock: 0, schemaRecords: 0, attestedUids: 0, attestations: 0 };
  const failure = { ok: false as const, reason: "rpc-error" as const };
  const index = {
    chainId: options.chainId ?? 31337,
    easAddress: options.easAddress ?? ("0x5FbDB2315678afecb367f032d93F642f64180aa3" as HexString),
    head: options.head ?? 1000n,
    schemas: new Map<string, { schema: string; revocable: boolean }>(),
    entries: [] as Entry[],
    calls,
    queries: [] as import("./attestation_index.ts").AttestedQuery[],
    /** The block of every pinned read, in order. */
    pinned: [] as bigint[],
    failWhen: (_method: IndexMethod, _n: number): boolean => false,
    /** Registers a schema string under a UID. */
    register(uid: string, schema: string, revocable = true) {
      index.schemas.set(uid.toLowerCase(), { schema, revocable });
    },
    /** Adds an attestation, logged at `block` (default the head). */
    add(attestation: import("./attestation_index.ts").IndexedAttestation, block?: bigint) {
      index.entries.push({ attestation, block: block ?? index.head });
    },
    latestBlock() {
      if (index.failWhen("latestBlock", ++calls.latestBlock)) return Promise.resolve(failure);
      return Promise.resolve({ ok: true as const, value: index.head });
    },
    schemaRecords(uids: readonly HexString[], block: bigint) {
      index.pinned.push(block);
      if (index.failWhen("schemaRecords", ++calls.schemaRecords)) return Promise.resolve(failure);
      return Promise.resolve({
        ok: true as const,
        value: uids.map((uid) => {
          const found = index.schemas.get(uid.toLowerCase());
          return found === undefined
            ? { uid, registered: false as const }
            : { uid, registered: true as const, schema: found.schema, revocable: found.revocable };
        }),
      });
    },
    attestedUids(query: import("./attestation_index.ts").AttestedQuery) {
      index.queries.push(query);
      index.pinned.push(query.toBlock);
      if (index.failWhen("attestedUids", ++calls.attestedUids)) return Promise.resolve(failure);
      const recipients = new Set(query.recipients.map((r) => r.toLowerCase()));
      const schemas = new Set(query.schemaUids.map((s) => s.toLowerCase()));
      const from = query.fromBlock ?? 0n;
      return Promise.resolve({
        ok: true as const,
        value: index.entries
          .filter((e) =>
            e.block >= from && e.block <= query.toBlock && recipients.has(e.attestation.recipient.toLowerCase()) &&
            schemas.has(e.attestation.schema.toLowerCase())
          )
          .map((e) => ({
            uid: e.attestation.uid,
            recipient: e.attestation.recipient,
            attester: e.attestation.attester,
            schemaUid: e.attestation.schema,
            blockNumber: e.block,
          })),
      });
    },
    attestations(uids: readonly HexString[], block: bigint) {
      index.pinned.push(block);
      if (index.failWhen("attestations", ++calls.attestations)) return Promise.resolve(failure);
      const byUid = new Map(index.entries.filter((e) => e.block <= block).map((e) => [e.attestation.uid.toLowerCase(), e]));
      const found = uids.map((uid) => byUid.get(uid.toLowerCase()));
      if (found.some((e) => e === undefined)) return Promise.resolve({ ok: false as const, reason: "inconsistent" as const });
      return Promise.resolve({ ok: true as const, value: found.map((e) => e!.attestation) });
    },
  };
  return index satisfies import("./attestation_index.ts").AttestationIndex;
}

/** A JWS verifier that answers `accept(check)` (default: every signature is valid) and records the checks. */
export function fakeJwsVerifier(accept: (check: import("./jws_verifier.ts").JwsSignatureCheck) => boolean = () => true) {
  const verifier = {
    checks: [] as import("./jws_verifier.ts").JwsSignatureCheck[],
    verify(check: import("./jws_verifier.ts").JwsSignatureCheck) {
      verifier.checks.push(check);
      return Promise.resolve(accept(check));
    },
  };
  return verifier satisfies import("./jws_verifier.ts").JwsVerifier;
}
