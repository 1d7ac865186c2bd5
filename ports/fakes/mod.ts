import type * as Accounts from "../accounts.ts";
import type { Clock } from "../clock.ts";
import type {
  BatchSubmission,
  DelegatedAttestCall,
  DelegateSubmitter,
  EasReader,
  FundsCheck,
  HexString,
  Simulation,
  Submission,
  SubmitOptions,
} from "../eas.ts";
import type { ClaimOutcome, ReplayClaim, ReplayFinal, ReplayRecord, ReplayStore } from "../replay_store.ts";

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

/** A signed transaction of a fake wallet: hash and bytes made from a counter. */
function fakeSignedTx(wallet: HexString, counter: number, fill: string): import("../eas.ts").SignedTx {
  const txHash = `0x${counter.toString(16).padStart(64, fill)}` as HexString;
  return { txHash, raw: `0x02${txHash.slice(2)}` as HexString, wallet: wallet.toLowerCase() as HexString, nonce: counter - 1 };
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
    async submit(call: DelegatedAttestCall, opts: SubmitOptions): Promise<Submission> {
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
    simulateBatch(calls: readonly DelegatedAttestCall[]): Promise<Simulation> {
      delegate.batchSimulations++;
      const reverting = calls.map((call) => delegate.revertsInBatch?.(call)).find((name) => name !== undefined);
      if (reverting !== undefined) return Promise.resolve({ ok: false, reason: "reverted", errorName: reverting });
      if (!delegate.simulation.ok) return Promise.resolve(delegate.simulation);
      return Promise.resolve({ ok: true, gas: 50_000n + 100_000n * BigInt(calls.length) });
    },
    async submitBatch(calls: readonly DelegatedAttestCall[], opts: SubmitOptions): Promise<BatchSubmission> {
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

/** An in-memory replay store with the same rules as the SQLite one. */
export function fakeReplayStore() {
  const rows = new Map<string, ReplayRecord>();
  const live = (state: string) => state === "checked" || state === "signed" || state === "sent";
  const update = (key: string, states: readonly string[], change: Partial<ReplayRecord>) => {
    const row = rows.get(key);
    if (row === undefined || !states.includes(row.state)) return false;
    rows.set(key, { ...row, ...change });
    return true;
  };
  const store = {
    rows,
    find: (key: string) => Promise.resolve(rows.get(key)),
    claim(claim: ReplayClaim): Promise<ClaimOutcome> {
      if (rows.has(claim.key)) return Promise.resolve("duplicate-signature");
      for (const row of rows.values()) {
        if (
          row.chainId === claim.chainId && row.attester === claim.attester && row.nonce === claim.nonce &&
          row.state !== "reverted"
        ) return Promise.resolve("nonce-in-flight");
      }
      rows.set(claim.key, { ...claim, state: "checked", tx: null, txHash: null, uid: null, blockNumber: null });
      return Promise.resolve("claimed");
    },
    markSigned: (key: string, tx: import("../eas.ts").SignedTx) =>
      Promise.resolve(update(key, ["checked"], { state: "signed", tx, txHash: tx.txHash })),
    markSent: (key: string) => Promise.resolve(void update(key, ["checked", "signed"], { state: "sent" })),
    finish(key: string, final: ReplayFinal) {
      update(key, ["checked", "signed", "sent"], {
        state: final.state,
        txHash: final.txHash,
        uid: final.state === "mined" ? final.uid : null,
        blockNumber: final.blockNumber,
      });
      return Promise.resolve();
    },
    release(key: string) {
      if (live(rows.get(key)?.state ?? "")) rows.delete(key);
      return Promise.resolve();
    },
    open: (createdBeforeMs: number) =>
      Promise.resolve([...rows.values()].filter((r) => live(r.state) && r.createdAtMs < createdBeforeMs)),
    prune(nowSeconds: bigint) {
      let n = 0;
      for (const [k, row] of rows) if (row.deadline < nowSeconds && !live(row.state)) rows.delete(k), n++;
      return Promise.resolve(n);
    },
  };
  return store satisfies ReplayStore;
}

/** A DNS resolver answering from a table; unknown names are NXDOMAIN. Counts lookups. */
export function fakeDnsResolver(
  txt: Record<string, import("../discovery.ts").TxtLookup> = {},
  addresses: Record<string, import("../discovery.ts").AddressLookup> = {},
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
  return resolver satisfies import("../discovery.ts").DnsResolver;
}

/** A did.json fetcher answering from a table keyed by host; unknown hosts are 404. */
export function fakeDidDocumentFetcher(
  answers: Record<string, import("../discovery.ts").DidDocumentFetch> = {},
  jwks: Record<string, import("../discovery.ts").DidDocumentFetch> = {},
) {
  const fetcher = {
    answers,
    jwks,
    fetches: [] as string[],
    /** The hosts whose `/.well-known/jwks.json` was fetched, in order (unknown hosts are 404). */
    jwksFetches: [] as string[],
    fetchDidDocument(host: string, path: readonly string[] = []) {
      fetcher.fetches.push([host, ...path].join("/"));
      return Promise.resolve(answers[host] ?? { status: "not-found" as const, url: `https://${host}/.well-known/did.json` });
    },
    fetchJwks(host: string) {
      fetcher.jwksFetches.push(host);
      return Promise.resolve(jwks[host] ?? { status: "not-found" as const, url: `https://${host}/.well-known/jwks.json` });
    },
  };
  return fetcher satisfies import("../discovery.ts").DidDocumentFetcher;
}

/** The methods of an attestation index, for {@link fakeAttestationIndex}'s failure switch. */
type IndexMethod = "latestBlock" | "schemaRecords" | "attestedUids" | "attestations";

/**
 * An attestation index over in-memory attestations, honouring recipients, schemas and block ranges.
 * Counts calls, records the block of every read, and fails a call when `failWhen(method, n)` says so
 * (`n` counts that method's calls from 1).
 */
export function fakeAttestationIndex(options: { chainId?: number; easAddress?: HexString; head?: bigint } = {}) {
  type Entry = { attestation: import("../attestation_index.ts").IndexedAttestation; block: bigint };
  const calls: Record<IndexMethod, number> = { latestBlock: 0, schemaRecords: 0, attestedUids: 0, attestations: 0 };
  const failure = { ok: false as const, reason: "rpc-error" as const };
  const index = {
    chainId: options.chainId ?? 31337,
    easAddress: options.easAddress ?? ("0x5FbDB2315678afecb367f032d93F642f64180aa3" as HexString),
    head: options.head ?? 1000n,
    schemas: new Map<string, { schema: string; revocable: boolean }>(),
    entries: [] as Entry[],
    calls,
    queries: [] as import("../attestation_index.ts").AttestedQuery[],
    /** The block of every pinned read, in order. */
    pinned: [] as bigint[],
    failWhen: (_method: IndexMethod, _n: number): boolean => false,
    /** Registers a schema string under a UID. */
    register(uid: string, schema: string, revocable = true) {
      index.schemas.set(uid.toLowerCase(), { schema, revocable });
    },
    /** Adds an attestation, logged at `block` (default the head). */
    add(attestation: import("../attestation_index.ts").IndexedAttestation, block?: bigint) {
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
    attestedUids(query: import("../attestation_index.ts").AttestedQuery) {
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
  return index satisfies import("../attestation_index.ts").AttestationIndex;
}

/** A JWS verifier that answers `accept(check)` (default: every signature is valid) and records the checks. */
export function fakeJwsVerifier(accept: (check: import("../jws_verifier.ts").JwsSignatureCheck) => boolean = () => true) {
  const verifier = {
    checks: [] as import("../jws_verifier.ts").JwsSignatureCheck[],
    verify(check: import("../jws_verifier.ts").JwsSignatureCheck) {
      verifier.checks.push(check);
      return Promise.resolve(accept(check));
    },
  };
  return verifier satisfies import("../jws_verifier.ts").JwsVerifier;
}

/** Accounts, challenges and sessions in memory, with the SQLite store's rules. */
export function fakeAccountStore() {
  const challenges = new Map<string, Accounts.Challenge>();
  const accounts = new Map<string, Accounts.Account>();
  const sessions = new Map<string, Accounts.Session>();
  const byIdOrAddress = (key: string) =>
    accounts.get(key) ?? [...accounts.values()].find((a) => a.address === key.toLowerCase());
  /** The client key each challenge was created for. */
  const challengeClients = new Map<string, string>();
  /** The `limit`-th newest creation inside the window, as the stores find it. */
  const nthNewest = (mine: (id: string, c: Accounts.Challenge) => boolean, since: number, limit: number) =>
    [...challenges].filter(([id, c]) => mine(id, c) && c.createdAtMs > since).map(([, c]) => c.createdAtMs)
      .sort((a, b) => b - a)[limit - 1];
  const store = {
    challenges,
    challengeClients,
    accounts,
    sessions,
    createChallenge(challenge: Accounts.Challenge, limits: Accounts.ChallengeLimits): Promise<Accounts.ChallengeCreation> {
      const now = challenge.createdAtMs;
      const address = challenge.address.toLowerCase();
      const since = now - limits.windowMs;
      const byClient = nthNewest((id) => challengeClients.get(id) === limits.client, since, limits.perClient);
      if (byClient !== undefined) return Promise.resolve({ ok: false, limit: "client", retryAfterMs: byClient + limits.windowMs - now });
      const byWallet = nthNewest((_, c) => c.address === address, since, limits.perWallet);
      if (byWallet !== undefined) return Promise.resolve({ ok: false, limit: "wallet", retryAfterMs: byWallet + limits.windowMs - now });
      const live = [...challenges.values()]
        .filter((c) => c.address === address && c.usedAtMs === null && c.expiresAtMs > now)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (b.id < a.id ? -1 : 1));
      const evict = live.slice(Math.max(0, limits.livePerWallet - 1));
      for (const c of evict) challenges.set(c.id, { ...c, usedAtMs: now });
      challenges.set(challenge.id, { ...challenge, address });
      challengeClients.set(challenge.id, limits.client);
      return Promise.resolve({ ok: true, evicted: evict.length });
    },
    findChallenge: (id: string) => Promise.resolve(challenges.get(id)),
    consumeChallenge(id: string, nowMs: number) {
      const found = challenges.get(id);
      if (found === undefined || found.usedAtMs !== null) return Promise.resolve(false);
      challenges.set(id, { ...found, usedAtMs: nowMs });
      return Promise.resolve(true);
    },
    findOrCreateAccount(address: string, newId: string, nowMs: number) {
      const existing = byIdOrAddress(address);
      if (existing !== undefined) return Promise.resolve(existing);
      const account = { id: newId, address: address.toLowerCase(), plan: "free" as const, createdAtMs: nowMs };
      accounts.set(newId, account);
      return Promise.resolve(account);
    },
    findAccount: (idOrAddress: string) => Promise.resolve(byIdOrAddress(idOrAddress)),
    listAccounts: () => Promise.resolve([...accounts.values()]),
    setDisplayName(id: string, displayName: string | null) {
      const found = accounts.get(id);
      if (found === undefined) return Promise.resolve(undefined);
      const updated = { ...found, displayName };
      accounts.set(id, updated);
      return Promise.resolve(updated);
    },
    setPlan(idOrAddress: string, plan: Accounts.Plan) {
      const found = byIdOrAddress(idOrAddress);
      if (found === undefined) return Promise.resolve(undefined);
      const updated = { ...found, plan };
      accounts.set(found.id, updated);
      return Promise.resolve(updated);
    },
    saveSession(session: Accounts.Session) {
      sessions.set(session.tokenHash, session);
      return Promise.resolve();
    },
    findSession(tokenHash: string) {
      const session = sessions.get(tokenHash);
      const account = session && accounts.get(session.accountId);
      return Promise.resolve(session && account ? { session, account } : undefined);
    },
    revokeSession(tokenHash: string, nowMs: number) {
      const session = sessions.get(tokenHash);
      if (session && session.revokedAtMs === null) sessions.set(tokenHash, { ...session, revokedAtMs: nowMs });
      return Promise.resolve();
    },
    prune(nowMs: number) {
      let removed = 0;
      for (const [id, c] of challenges) {
        if (c.expiresAtMs >= nowMs) continue;
        challenges.delete(id);
        challengeClients.delete(id);
        removed++;
      }
      for (const [hash, s] of sessions) if (s.expiresAtMs < nowMs && sessions.delete(hash)) removed++;
      return Promise.resolve(removed);
    },
  };
  return store satisfies import("../accounts.ts").AccountStore;
}

const OPEN_WRITE: readonly Accounts.WriteState[] = ["reserved", "signed", "broadcast"];

/** A sponsored-write ledger in memory; records every transition. */
export function fakeWriteLedger() {
  const writes = new Map<string, Accounts.WriteRecord>();
  const update = (id: string, states: readonly Accounts.WriteState[], change: Partial<Accounts.WriteRecord>) => {
    const found = writes.get(id);
    if (found === undefined || !states.includes(found.state)) return Promise.resolve(false);
    writes.set(id, { ...found, ...change });
    return Promise.resolve(true);
  };
  const usage = (accountId: string, year: number) => {
    const rows = [...writes.values()].filter((w) => w.accountId === accountId && w.year === year);
    return {
      used: rows.filter((w) => w.state === "committed").length,
      reserved: rows.filter((w) => OPEN_WRITE.includes(w.state)).length,
    };
  };
  const ledger = {
    writes,
    usage: (accountId: string, year: number) => Promise.resolve(usage(accountId, year)),
    reserve(reservation: Accounts.WriteReservation, limit: number) {
      const now = usage(reservation.accountId, reservation.year);
      if (now.used + now.reserved >= limit) return Promise.resolve(false);
      writes.set(reservation.id, {
        ...reservation,
        state: "reserved",
        tx: null,
        txHash: null,
        uid: null,
        blockNumber: null,
        updatedAtMs: reservation.createdAtMs,
      });
      return Promise.resolve(true);
    },
    markSigned: (id: string, tx: import("../eas.ts").SignedTx, nowMs: number) =>
      update(id, ["reserved"], { state: "signed", tx, txHash: tx.txHash, updatedAtMs: nowMs }).then((changed) => changed),
    markSent: (id: string, nowMs: number) => update(id, ["reserved", "signed"], { state: "broadcast", updatedAtMs: nowMs }).then(() => {}),
    commit: (id: string, outcome: { txHash: string; uid: string | null; blockNumber: bigint }, nowMs: number) =>
      update(id, OPEN_WRITE, { state: "committed", ...outcome, updatedAtMs: nowMs }).then(() => {}),
    release: (id: string, nowMs: number) => update(id, OPEN_WRITE, { state: "released", updatedAtMs: nowMs }).then(() => {}),
    unsettled: (createdBeforeMs: number) =>
      Promise.resolve([...writes.values()].filter((w) => OPEN_WRITE.includes(w.state) && w.createdAtMs < createdBeforeMs)),
    find: (id: string) => Promise.resolve(writes.get(id)),
  };
  return ledger satisfies import("../accounts.ts").SponsoredWriteLedger;
}

/** A witness wallet that records its calls; its answers are settable. */
export function fakeWitnessWriter(options: { simulation?: Simulation; submission?: Submission; funds?: FundsCheck } = {}) {
  type Call = import("../witness.ts").WitnessAttestCall;
  let counter = 0;
  const writer = {
    address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" as HexString,
    simulated: [] as Call[],
    sent: [] as Call[],
    funds: options.funds ?? ("ok" as FundsCheck),
    simulation: options.simulation ?? { ok: true as const, gas: 150_000n } as Simulation,
    submission: options.submission,
    /** Runs between signing and the answer, e.g. to look at the ledger mid-flight. */
    duringSend: async (_txHash: HexString) => {},
    checkFunds: () => Promise.resolve(writer.funds),
    simulate(call: Call) {
      writer.simulated.push(call);
      return Promise.resolve(writer.simulation);
    },
    async submit(call: Call, opts: SubmitOptions): Promise<Submission> {
      counter++;
      const tx = fakeSignedTx(writer.address, counter, "c");
      try {
        await opts.onSigned(tx);
      } catch {
        return { ok: false, reason: "not-broadcast" };
      }
      if (writer.submission?.ok === false && writer.submission.reason === "not-broadcast") return writer.submission;
      await opts.onSent(tx.txHash);
      writer.sent.push(call);
      await writer.duringSend(tx.txHash);
      if (writer.submission) return writer.submission;
      return { ok: true, txHash: tx.txHash, blockNumber: BigInt(100 + counter), uid: `0x${counter.toString(16).padStart(64, "d")}` as HexString };
    },
  };
  return writer satisfies import("../witness.ts").WitnessWriter;
}

/** Random bytes from a counter: deterministic, never repeating within a test. */
export function fakeRandom() {
  let counter = 0;
  return {
    bytes(length: number) {
      const out = new Uint8Array(length);
      let n = ++counter;
      for (let i = length - 1; i >= 0 && n > 0; i--, n = Math.floor(n / 256)) out[i] = n % 256;
      out[0] = 0x5a;
      return out;
    },
  } satisfies import("../random.ts").Random;
}

/** The attestation index's store in memory, with the rules of the SQLite one. */
export function fakeIndexStore() {
  type IndexedAttestation = import("../attestation_index.ts").IndexedAttestation;
  type Row = import("../attestation_index.ts").PagedLog & { revokedBlock: bigint | null; tail: boolean; record?: IndexedAttestation | undefined };
  type Checkpoint = import("../attestation_index.ts").IndexCheckpoint;
  let rows: Row[] = [];
  let checkpoints: Checkpoint[] = [];
  let poll: { checkedAtMs: number; chainHead: bigint } | undefined;
  const byPosition = (a: Row, b: Row) => (a.blockNumber !== b.blockNumber ? (a.blockNumber < b.blockNumber ? -1 : 1) : a.logIndex - b.logIndex);
  const saveRecord = (a: IndexedAttestation) => {
    rows = rows.map((r) => (r.uid === a.uid.toLowerCase() ? { ...r, record: a } : r));
  };
  /** The SQL stores' filter (decisions §24): time from the stored record, revocation as of `toBlock`. */
  const matches = (r: Row, f: import("../attestation_index.ts").IndexFilter) => {
    const revoked = r.revokedBlock !== null && r.revokedBlock <= f.toBlock;
    const time = r.record?.time;
    return r.blockNumber <= f.toBlock &&
      (f.recipient === undefined || r.recipient === f.recipient.toLowerCase()) &&
      (f.attester === undefined || r.attester === f.attester.toLowerCase()) &&
      (f.schemaUid === undefined || r.schemaUid === f.schemaUid.toLowerCase()) &&
      (f.revoked === undefined || f.revoked === revoked) &&
      (f.since === undefined || (time !== undefined && time >= f.since)) &&
      (f.until === undefined || (time !== undefined && time < f.until));
  };
  const store = {
    rows: () => rows,
    checkpoint: () => Promise.resolve(checkpoints.at(-1)),
    history: (limit: number) => Promise.resolve(checkpoints.slice().reverse().slice(0, limit)),
    append(
      expected: bigint | undefined,
      events: readonly import("../attestation_index.ts").EasEvent[],
      next: Checkpoint,
      details: import("../attestation_index.ts").AppendDetails = {},
    ) {
      if (checkpoints.at(-1)?.blockNumber !== expected) return Promise.resolve(false);
      const confirmedTo = details.confirmedTo ?? next.blockNumber;
      for (const e of events) {
        if (e.kind === "attested") {
          if (!rows.some((r) => r.uid === e.uid)) rows.push({ ...e, revokedBlock: null, tail: e.blockNumber > confirmedTo });
        } else {
          rows = rows.map((r) => (r.uid === e.uid ? { ...r, revokedBlock: e.blockNumber } : r));
        }
      }
      for (const a of details.attestations ?? []) saveRecord(a);
      rows = rows.map((r) => (r.tail && r.blockNumber <= confirmedTo ? { ...r, tail: false } : r));
      rows.sort(byPosition);
      for (const b of details.blocks ?? []) checkpoints.push(b);
      checkpoints.push(next);
      return Promise.resolve(true);
    },
    rewind(to: Checkpoint | undefined) {
      const limit = to?.blockNumber ?? -1n;
      rows = rows.filter((r) => r.blockNumber <= limit).map((r) =>
        r.revokedBlock !== null && r.revokedBlock > limit
          ? { ...r, revokedBlock: null, record: r.record === undefined ? undefined : { ...r.record, revocationTime: 0n } }
          : r
      );
      checkpoints = checkpoints.filter((c) => c.blockNumber < limit);
      if (to !== undefined) checkpoints.push(to);
      return Promise.resolve();
    },
    attested(q: import("../attestation_index.ts").AttestedQuery & { fromBlock: bigint }) {
      const recipients = q.recipients.map((r) => r.toLowerCase());
      const schemas = q.schemaUids.map((s) => s.toLowerCase());
      return Promise.resolve(rows.filter((r) =>
        r.blockNumber >= q.fromBlock && r.blockNumber <= q.toBlock && recipients.includes(r.recipient) && schemas.includes(r.schemaUid)
      ));
    },
    query(q: import("../attestation_index.ts").IndexQuery) {
      const after = q.after;
      const matching = rows.filter((r) => matches(r, q)).filter((r) =>
        after === undefined ||
        (q.order === "newest"
          ? r.blockNumber < after.blockNumber || (r.blockNumber === after.blockNumber && r.logIndex < after.logIndex)
          : r.blockNumber > after.blockNumber || (r.blockNumber === after.blockNumber && r.logIndex > after.logIndex))
      );
      return Promise.resolve((q.order === "newest" ? matching.reverse() : matching).slice(0, q.limit));
    },
    count: (filter: import("../attestation_index.ts").IndexFilter) => Promise.resolve(rows.filter((r) => matches(r, filter)).length),
    head() {
      const c = checkpoints.at(-1);
      return Promise.resolve(c === undefined ? undefined : { ...c, checkedAtMs: poll?.checkedAtMs ?? null, chainHead: poll?.chainHead ?? null });
    },
    checked(nowMs: number, chainHead: bigint) {
      poll = { checkedAtMs: Math.max(poll?.checkedAtMs ?? 0, nowMs), chainHead };
      return Promise.resolve();
    },
    records(uids: readonly HexString[]) {
      const wanted = new Set(uids.map((u) => u.toLowerCase()));
      return Promise.resolve(rows.filter((r) => wanted.has(r.uid) && r.record !== undefined).map((r) => ({
        ...r.record!,
        blockNumber: r.blockNumber,
        revokedBlock: r.revokedBlock,
      })));
    },
    incomplete: (limit: number) => Promise.resolve(rows.filter((r) => r.record === undefined).slice(0, limit).map((r) => r.uid)),
    complete(records: readonly IndexedAttestation[]) {
      for (const a of records) saveRecord(a);
      return Promise.resolve();
    },
    counts: () => Promise.resolve({ attestations: rows.length, tail: rows.filter((r) => r.tail).length }),
    lease: () => Promise.resolve(true),
  };
  return store satisfies import("../attestation_index.ts").IndexStore;
}

/** The public relay's gas budget in memory, with the stores' rule: a charge that would pass the limit adds nothing. */
export function fakeGasBudget() {
  const windows = new Map<number, bigint>();
  /** Each key's part of a window, by `${windowStartMs} ${key}` (issue 43). */
  const shares = new Map<string, bigint>();
  const budget = {
    windows,
    shares,
    charges: 0,
    used: (windowStartMs: number) => Promise.resolve(windows.get(windowStartMs) ?? 0n),
    usage: (windowStartMs: number, keys: readonly string[]) =>
      Promise.resolve({ total: windows.get(windowStartMs) ?? 0n, byKey: keys.map((key) => shares.get(`${windowStartMs} ${key}`) ?? 0n) }),
    charge(windowStartMs: number, gas: bigint, limit: bigint, parts: readonly import("../gas_budget.ts").GasShare[] = []) {
      budget.charges++;
      const next = (windows.get(windowStartMs) ?? 0n) + gas;
      if (next > limit) return Promise.resolve(false);
      const nextParts = parts.map((p) => ({ id: `${windowStartMs} ${p.key}`, gas: (shares.get(`${windowStartMs} ${p.key}`) ?? 0n) + gas, limit: p.limit }));
      if (nextParts.some((p) => p.gas > p.limit)) return Promise.resolve(false);
      windows.set(windowStartMs, next);
      for (const p of nextParts) shares.set(p.id, p.gas);
      return Promise.resolve(true);
    },
  };
  return budget satisfies import("../gas_budget.ts").GasBudget;
}

/** Token buckets in memory, with the stores' arithmetic (refill to now, then take `count` if there are that many). */
export function fakeRateCounter() {
  const buckets = new Map<string, { tokens: number; atMs: number; fullAtMs: number }>();
  const counter = {
    buckets,
    takes: 0,
    take(bucket: import("../rate_counter.ts").RateBucket, key: string, { count, nowMs }: { count: number; nowMs: number }) {
      counter.takes++;
      const perMs = Math.max(bucket.perMinute / 60_000, 1e-12);
      const id = `${bucket.scope}|${key}`;
      const row = buckets.get(id);
      const refilled = row === undefined ? bucket.capacity : Math.min(bucket.capacity, row.tokens + Math.max(0, nowMs - row.atMs) * perMs);
      const allowed = refilled >= count;
      const tokens = allowed ? refilled - count : refilled;
      const atMs = Math.max(row?.atMs ?? nowMs, nowMs);
      buckets.set(id, { tokens, atMs, fullAtMs: atMs + (bucket.capacity - tokens) / perMs });
      return Promise.resolve({ allowed, tokens });
    },
    prune(nowMs: number) {
      let gone = 0;
      for (const [id, row] of buckets) if (row.fullAtMs <= nowMs && buckets.delete(id)) gone++;
      return Promise.resolve(gone);
    },
  };
  return counter satisfies import("../rate_counter.ts").RateCounter;
}

/** MCP session records in memory, with the stores' rules: idle by last use, least recently used pushed out first. */
export function fakeMcpSessions() {
  // Map order is insertion order and every use re-inserts: the first entries are the least recently used.
  const sessions = new Map<string, number>();
  const dropIdle = (nowMs: number, idleMs: number) => {
    let gone = 0;
    for (const [id, usedAtMs] of sessions) if (usedAtMs <= nowMs - idleMs && sessions.delete(id)) gone++;
    return gone;
  };
  const store = {
    sessions,
    open(id: string, { maxSessions, idleMs, nowMs }: { maxSessions: number; idleMs: number; nowMs: number }) {
      const idle = dropIdle(nowMs, idleMs);
      let full = 0;
      while (sessions.size >= maxSessions) {
        sessions.delete(sessions.keys().next().value!);
        full++;
      }
      sessions.set(id, nowMs);
      return Promise.resolve({ idle, full });
    },
    touch(id: string, { nowMs, idleMs }: { nowMs: number; idleMs: number }) {
      const usedAtMs = sessions.get(id);
      if (usedAtMs === undefined || usedAtMs <= nowMs - idleMs) return Promise.resolve(false);
      sessions.delete(id);
      sessions.set(id, Math.max(usedAtMs, nowMs));
      return Promise.resolve(true);
    },
    close: (id: string) => Promise.resolve(sessions.delete(id)),
    sweep: ({ nowMs, idleMs }: { nowMs: number; idleMs: number }) => Promise.resolve(dropIdle(nowMs, idleMs)),
    count: ({ nowMs, idleMs }: { nowMs: number; idleMs: number }) =>
      Promise.resolve([...sessions.values()].filter((usedAtMs) => usedAtMs > nowMs - idleMs).length),
  };
  return store satisfies import("../mcp_sessions.ts").McpSessionStore;
}

/** Idempotency keys in memory, with the stores' rules (the record's `createdAtMs` is the time it is asked at). */
export function fakeIdempotencyStore() {
  type Held = import("../idempotency.ts").IdempotencyRecord;
  const records = new Map<string, Held>();
  const id = (scope: string, key: string) => `${scope}\n${key}`;
  const store = {
    records,
    begin(record: Omit<Held, "state" | "answer" | "submissionId">) {
      const held = records.get(id(record.scope, record.key));
      const nowMs = record.createdAtMs;
      const expired = held !== undefined && held.expiresAtMs <= nowMs;
      const dead = held !== undefined && held.state === "running" && held.leaseUntilMs <= nowMs && held.fingerprint === record.fingerprint;
      if (held === undefined || expired) {
        records.set(id(record.scope, record.key), { ...record, state: "running", answer: null, submissionId: null });
        return Promise.resolve({ kind: "started" as const, submissionId: null });
      }
      if (dead) {
        records.set(id(record.scope, record.key), { ...held, leaseUntilMs: record.leaseUntilMs });
        return Promise.resolve({ kind: "started" as const, submissionId: held.submissionId });
      }
      return Promise.resolve({ kind: "exists" as const, record: held });
    },
    attach(scope: string, key: string, submissionId: string) {
      const held = records.get(id(scope, key));
      if (held?.state === "running") records.set(id(scope, key), { ...held, submissionId });
      return Promise.resolve();
    },
    complete(scope: string, key: string, answer: import("../idempotency.ts").StoredAnswer) {
      const held = records.get(id(scope, key));
      if (held?.state === "running") records.set(id(scope, key), { ...held, state: "done", answer });
      return Promise.resolve();
    },
    abandon(scope: string, key: string) {
      if (records.get(id(scope, key))?.state === "running") records.delete(id(scope, key));
      return Promise.resolve();
    },
    prune(nowMs: number) {
      let gone = 0;
      for (const [k, held] of records) if (held.expiresAtMs <= nowMs && records.delete(k)) gone++;
      return Promise.resolve(gone);
    },
  };
  return store satisfies import("../idempotency.ts").IdempotencyStore;
}

/** Tracked submissions in memory, with the stores' rules. */
export function fakeSubmissionRecords() {
  type Rec = import("../submission_records.ts").SubmissionRecord;
  type Outcome = import("../submission_records.ts").SubmissionOutcome;
  const records = new Map<string, Rec>();
  /** Settled, `submission.settled` not yet queued. */
  const untold = new Set<string>();
  const settle = (record: Rec, outcome: Outcome, nowMs: number, options?: { readonly untold?: boolean }) => {
    if (record.outcome !== null) return false;
    records.set(record.id, { ...record, outcome, updatedAtMs: nowMs });
    if (options?.untold !== false) untold.add(record.id);
    return true;
  };
  const store = {
    records,
    create(r: { id: string; scope: string; ref: string; createdAtMs: number; items?: readonly import("../submission_records.ts").SubmissionItem[] | undefined }) {
      records.set(r.id, { ...r, items: r.items ?? null, outcome: null, updatedAtMs: r.createdAtMs });
      return Promise.resolve();
    },
    find: (id: string) => Promise.resolve(records.get(id)),
    list(scope: string, page: { limit: number; after?: import("../submission_records.ts").SubmissionCursor | undefined }) {
      const after = page.after;
      const newest = [...records.values()].filter((r) => r.scope === scope)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
        .filter((r) => after === undefined || r.createdAtMs < after.createdAtMs || (r.createdAtMs === after.createdAtMs && r.id < after.id));
      return Promise.resolve(newest.slice(0, page.limit));
    },
    settle(id: string, outcome: Outcome, nowMs: number, options?: { readonly untold?: boolean }) {
      const record = records.get(id);
      return Promise.resolve(record !== undefined && settle(record, outcome, nowMs, options));
    },
    settleRef(ref: string, outcome: Outcome, nowMs: number) {
      return Promise.resolve([...records.values()].filter((record) => record.ref === ref && settle(record, outcome, nowMs)).map((r) => r.id));
    },
    untoldIds: untold as ReadonlySet<string>,
    told(id: string) {
      untold.delete(id);
      return Promise.resolve();
    },
    untold(beforeMs: number, limit: number) {
      const open = [...records.values()].filter((r) => (r.outcome === null || untold.has(r.id)) && r.createdAtMs < beforeMs)
        .sort((a, b) => a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return Promise.resolve(open.slice(0, limit));
    },
    prune(beforeMs: number) {
      let gone = 0;
      for (const [id, r] of records) if (r.createdAtMs < beforeMs && r.outcome !== null && records.delete(id)) gone++;
      return Promise.resolve(gone);
    },
  };
  return store satisfies import("../submission_records.ts").SubmissionRecordStore;
}

/** Premium reads in memory, with the stores' rules: a reservation that would pass the limit adds nothing; a release stops at zero. */
export function fakePremiumReadLedger() {
  const rows = new Map<string, number>();
  const key = (accountId: string, year: number) => `${accountId}|${year}`;
  const ledger = {
    rows,
    used: (accountId: string, year: number) => Promise.resolve(rows.get(key(accountId, year)) ?? 0),
    reserve(accountId: string, year: number, count: number, limit: number) {
      const now = rows.get(key(accountId, year)) ?? 0;
      if (now + count > limit) return Promise.resolve(false);
      rows.set(key(accountId, year), now + count);
      return Promise.resolve(true);
    },
    release(accountId: string, year: number, count: number) {
      const now = rows.get(key(accountId, year));
      if (now !== undefined) rows.set(key(accountId, year), Math.max(0, now - count));
      return Promise.resolve();
    },
  };
  return ledger satisfies import("../premium_reads.ts").PremiumReadLedger;
}

/**
 * A node for the premium proxy: answers `eth_blockNumber` with `head`, other calls through `answer` (default a
 * result naming the method), records every batch it was sent; `down` makes it unreachable.
 */
export function fakeRawRpc(options: { head?: bigint; answer?: (call: import("../premium_reads.ts").RpcCall) => { result?: unknown; error?: { code: number; message: string } } } = {}) {
  const rpc = {
    head: options.head ?? 100n,
    down: false,
    batches: [] as import("../premium_reads.ts").RpcCall[][],
    /** Set: the next sends are handed over and their answers lost (a timeout when `timedOut`). */
    lost: undefined as { timedOut: boolean } | undefined,
    /** Set: sends wait on this before answering (a slow node). */
    gate: undefined as Promise<void> | undefined,
    forward(calls: readonly import("../premium_reads.ts").RpcCall[]): Promise<readonly import("../premium_reads.ts").RpcAnswer[] | undefined> {
      rpc.batches.push([...calls]);
      if (rpc.down) return Promise.resolve(undefined);
      return Promise.resolve(calls.map((c) => ({
        id: c.id,
        ...(c.method === "eth_blockNumber" ? { result: `0x${rpc.head.toString(16)}` } : options.answer?.(c) ?? { result: `${c.method}-ok` }),
      })));
    },
    /** `forward` (so a test's replacement of it applies), with `down` as not sent and `lost` as lost. */
    async send(calls: readonly import("../premium_reads.ts").RpcCall[]): Promise<import("../premium_reads.ts").RpcSendOutcome> {
      await rpc.gate;
      if (rpc.lost !== undefined) {
        rpc.batches.push([...calls]);
        return { kind: "lost", timedOut: rpc.lost.timedOut };
      }
      const answers = await rpc.forward(calls);
      return answers === undefined ? { kind: "not_sent" } : { kind: "answered", answers };
    },
  };
  return rpc satisfies import("../premium_reads.ts").RawRpc;
}

/** An in-memory subject store with the adapters' rules (one default, bootstrap replaced by the first added); counts its writes. */
export function fakeSubjectStore() {
  let rows: import("../subjects.ts").Subject[] = [];
  const of = (accountId: string) =>
    rows.filter((s) => s.accountId === accountId).sort((a, b) => Number(b.isDefault) - Number(a.isDefault) || a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
  const store = {
    writes: 0,
    rows: () => rows,
    list: (accountId: string) => Promise.resolve(of(accountId)),
    ensureBootstrap(subject: import("../subjects.ts").Subject) {
      if (of(subject.accountId).length === 0) rows.push({ ...subject, isDefault: true }), store.writes++;
      return Promise.resolve();
    },
    add(subject: import("../subjects.ts").Subject, maxPerAccount: number) {
      const current = of(subject.accountId);
      if (current.some((s) => s.canonicalDid === subject.canonicalDid)) return Promise.resolve("exists" as const);
      if (current.filter((s) => !s.bootstrap).length >= maxPerAccount) return Promise.resolve("limit" as const);
      const onlyBootstrap = current.length > 0 && current.every((s) => s.bootstrap);
      if (onlyBootstrap) rows = rows.filter((s) => s.accountId !== subject.accountId);
      rows.push({ ...subject, isDefault: onlyBootstrap || current.length === 0 });
      store.writes++;
      return Promise.resolve("added" as const) as Promise<"added" | "exists" | "limit">;
    },
    update(accountId: string, id: string, change: { readonly displayName?: string | null; readonly isDefault?: true }) {
      const found = rows.find((s) => s.accountId === accountId && s.id === id);
      if (found === undefined) return Promise.resolve(undefined);
      rows = rows.map((s) => {
        if (s.accountId !== accountId) return s;
        const named = s.id === id && change.displayName !== undefined ? { ...s, displayName: change.displayName } : s;
        return change.isDefault ? { ...named, isDefault: s.id === id } : named;
      });
      store.writes++;
      return Promise.resolve(rows.find((s) => s.id === id));
    },
    remove(accountId: string, id: string) {
      const found = rows.find((s) => s.accountId === accountId && s.id === id);
      if (found === undefined) return Promise.resolve(false);
      rows = rows.filter((s) => s !== found);
      const next = of(accountId)[0];
      if (found.isDefault && next !== undefined) rows = rows.map((s) => (s === next ? { ...s, isDefault: true } : s));
      store.writes++;
      return Promise.resolve(true);
    },
  };
  return store satisfies import("../subjects.ts").SubjectStore;
}

/** The ERC-6492 factory calls sent, in memory, with the stores' rule: one record per chain and wallet. */
export function fakeFactoryCalls() {
  const rows = new Map<string, import("../factory_calls.ts").FactoryCallRecord>();
  const id = (chainId: number, wallet: string) => `${chainId}:${wallet.toLowerCase()}`;
  const store = {
    rows,
    begin(attempt: import("../factory_calls.ts").FactoryCallAttempt) {
      const key = id(attempt.chainId, attempt.wallet);
      if (rows.has(key)) return Promise.resolve(false);
      rows.set(key, {
        ...attempt,
        wallet: attempt.wallet.toLowerCase(),
        factory: attempt.factory.toLowerCase(),
        state: "sent",
        txHash: null,
        gasUsed: null,
        updatedAtMs: attempt.createdAtMs,
      });
      return Promise.resolve(true);
    },
    failed(chainId: number, wallet: string, burn: { txHash: string; gasUsed: bigint | null }, nowMs: number) {
      const row = rows.get(id(chainId, wallet));
      if (row !== undefined) rows.set(id(chainId, wallet), { ...row, state: "failed", ...burn, updatedAtMs: nowMs });
      return Promise.resolve();
    },
    forget(chainId: number, wallet: string) {
      rows.delete(id(chainId, wallet));
      return Promise.resolve();
    },
    find: (chainId: number, wallet: string) => Promise.resolve(rows.get(id(chainId, wallet))),
  };
  return store satisfies import("../factory_calls.ts").FactoryCallStore;
}

/** Signing keys in memory, with the stores' rules: one row per account and key, upserts keep id, creation and type. */
export function fakeSigningKeyStore() {
  type SigningKeyRecord = import("../signing_keys.ts").SigningKeyRecord;
  const rows: SigningKeyRecord[] = [];
  const store = {
    rows,
    upsert(record: SigningKeyRecord, maxPerAccount: number): Promise<import("../signing_keys.ts").SigningKeyUpsert> {
      const i = rows.findIndex((r) => r.accountId === record.accountId && r.keyDid === record.keyDid);
      if (i !== -1) {
        const { displayName, tags, notes, updatedAtMs } = record;
        rows[i] = { ...rows[i]!, displayName, tags: [...tags], notes, updatedAtMs };
        return Promise.resolve({ outcome: "updated", record: rows[i]! });
      }
      if (rows.filter((r) => r.accountId === record.accountId).length >= maxPerAccount) return Promise.resolve({ outcome: "limit" });
      rows.push({ ...record, tags: [...record.tags] });
      return Promise.resolve({ outcome: "created", record: rows.at(-1)! });
    },
    list(accountId: string, filter: { keyType?: string | undefined; tag?: string | undefined } = {}) {
      return Promise.resolve(rows
        .filter((r) => r.accountId === accountId && (filter.keyType === undefined || r.keyType === filter.keyType))
        .filter((r) => filter.tag === undefined || r.tags.includes(filter.tag))
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? 1 : -1)));
    },
  };
  return store satisfies import("../signing_keys.ts").SigningKeyStore;
}

/** An OAuth store in memory (decisions §19); `writes` counts every change, so a test can show nothing was written. */
export function fakeOAuthStore() {
  const clients = new Map<string, import("../oauth.ts").OAuthClient & { registeredBy: string | null; grantedAtMs: number | null }>();
  const codes = new Map<string, import("../oauth.ts").StoredCode>();
  const grants = new Map<string, import("../oauth.ts").Grant>();
  const refresh = new Map<string, import("../oauth.ts").RefreshToken>();
  const revoked = new Set<string>();
  const keys: import("../oauth.ts").StoredSigningKey[] = [];
  const store = {
    writes: 0,
    clients,
    grants,
    codes,
    registerClient(client, limits, nowMs) {
      const since = nowMs - limits.windowMs;
      const mine = [...clients.values()].filter((c) => c.registeredBy === limits.client && c.createdAtMs > since);
      if (mine.length >= limits.perClient) return Promise.resolve({ ok: false as const, limit: "client" as const, retryAfterMs: Math.min(...mine.map((c) => c.createdAtMs)) + limits.windowMs - nowMs });
      const all = [...clients.values()].filter((c) => c.accountId === null && c.createdAtMs > since);
      if (all.length >= limits.total) return Promise.resolve({ ok: false as const, limit: "total" as const, retryAfterMs: Math.min(...all.map((c) => c.createdAtMs)) + limits.windowMs - nowMs });
      store.writes++;
      clients.set(client.clientId, { ...client, registeredBy: limits.client, grantedAtMs: null });
      return Promise.resolve({ ok: true as const });
    },
    createClient(client, max) {
      if ([...clients.values()].filter((c) => c.accountId === client.accountId).length >= max) return Promise.resolve(false);
      store.writes++;
      clients.set(client.clientId, { ...client, registeredBy: client.accountId, grantedAtMs: null });
      return Promise.resolve(true);
    },
    findClient: (id) => Promise.resolve(clients.get(id)),
    listClients: (accountId) => Promise.resolve([...clients.values()].filter((c) => c.accountId === accountId)),
    deleteClient(accountId, clientId) {
      if (clients.get(clientId)?.accountId !== accountId) return Promise.resolve(false);
      store.writes++;
      clients.delete(clientId);
      for (const [id, g] of grants) if (g.clientId === clientId) grants.delete(id);
      return Promise.resolve(true);
    },
    saveCode(code, limits) {
      const live = [...codes.values()].filter((c) => c.usedAtMs === null && c.expiresAtMs > code.createdAtMs);
      if (live.filter((c) => c.accountId === code.accountId).length >= limits.perAccount) return Promise.resolve("account_limit" as const);
      if (live.filter((c) => c.clientId === code.clientId).length >= limits.perClient) return Promise.resolve("client_limit" as const);
      store.writes++;
      codes.set(code.codeHash, { ...code, usedAtMs: null, grantId: null });
      return Promise.resolve("saved" as const);
    },
    findCode: (hash) => Promise.resolve(codes.get(hash)),
    exchangeCode(hash, grant, token, nowMs, maxGrantsPerAccount) {
      const code = codes.get(hash);
      if (code === undefined || code.usedAtMs !== null) return Promise.resolve(false);
      store.writes++;
      codes.set(hash, { ...code, usedAtMs: nowMs, grantId: grant.id });
      grants.set(grant.id, grant);
      if (token !== null) refresh.set(token.tokenHash, token);
      const others = [...grants.values()]
        .filter((g) => g.accountId === grant.accountId && g.revokedAtMs === null && g.id !== grant.id)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? 1 : -1));
      for (const g of others.slice(Math.max(0, maxGrantsPerAccount - 1))) grants.set(g.id, { ...g, revokedAtMs: nowMs });
      return Promise.resolve(true);
    },
    rotateRefreshToken(hash, next, nowMs) {
      const token = refresh.get(hash);
      if (token === undefined) return Promise.resolve({ kind: "invalid" as const });
      store.writes++;
      if (token.usedAtMs !== null) {
        const g = grants.get(token.grantId);
        if (g !== undefined && g.revokedAtMs === null) grants.set(g.id, { ...g, revokedAtMs: nowMs });
        return Promise.resolve({ kind: "reused" as const, grantId: token.grantId });
      }
      const grant = grants.get(token.grantId);
      if (grant === undefined || grant.revokedAtMs !== null || nowMs >= token.expiresAtMs || !clients.has(grant.clientId)) return Promise.resolve({ kind: "invalid" as const });
      refresh.set(hash, { ...token, usedAtMs: nowMs });
      refresh.set(next.tokenHash, next);
      return Promise.resolve({ kind: "rotated" as const, grant });
    },
    findRefreshToken(hash) {
      const token = refresh.get(hash);
      const grant = token === undefined ? undefined : grants.get(token.grantId);
      return Promise.resolve(token === undefined || grant === undefined ? undefined : { token, grant });
    },
    revokeGrant(id, nowMs) {
      const g = grants.get(id);
      if (g !== undefined && g.revokedAtMs === null) {
        store.writes++;
        grants.set(id, { ...g, revokedAtMs: nowMs });
      }
      return Promise.resolve();
    },
    listAuthorizations(accountId, nowMs, max) {
      const live = [...grants.values()].filter((g) => g.accountId === accountId && g.revokedAtMs === null &&
        (g.createdAtMs > nowMs - 3_600_000 || [...refresh.values()].some((t) => t.grantId === g.id && t.usedAtMs === null && t.expiresAtMs > nowMs)));
      const byClient = new Map<string, import("../oauth.ts").Grant[]>();
      for (const g of live) byClient.set(g.clientId, [...(byClient.get(g.clientId) ?? []), g]);
      return Promise.resolve([...byClient].map(([clientId, list]) => ({
        clientId,
        clientName: clients.get(clientId)?.name ?? null,
        scopes: [...new Set(list.map((g) => g.scope))],
        firstAuthorizedAtMs: Math.min(...list.map((g) => g.createdAtMs)),
        lastAuthorizedAtMs: Math.max(...list.map((g) => g.createdAtMs)),
        grants: list.length,
      })).sort((a, b) => b.lastAuthorizedAtMs - a.lastAuthorizedAtMs).slice(0, max));
    },
    revokeAuthorizations(accountId, clientId, nowMs) {
      let n = 0;
      for (const [hash, c] of codes) {
        if (c.accountId === accountId && c.clientId === clientId && c.usedAtMs === null && c.expiresAtMs > nowMs) {
          codes.delete(hash);
          n++;
        }
      }
      for (const g of grants.values()) {
        if (g.accountId === accountId && g.clientId === clientId && g.revokedAtMs === null) {
          grants.set(g.id, { ...g, revokedAtMs: nowMs });
          n++;
        }
      }
      if (n > 0) store.writes++;
      return Promise.resolve(n);
    },
    revokeAccessToken(jti) {
      store.writes++;
      revoked.add(jti);
      return Promise.resolve();
    },
    accessTokenActive: ({ jti, clientId, grantId }) =>
      Promise.resolve(clients.has(clientId) && !revoked.has(jti) && (grantId === null || grants.get(grantId)?.revokedAtMs === null)),
    signingKeys: () => Promise.resolve([...keys].sort((a, b) => b.createdAtMs - a.createdAtMs)),
    addSigningKey(key) {
      keys.push(key);
      return Promise.resolve();
    },
    dropSigningKeys: () => Promise.resolve(0),
    prune: () => Promise.resolve(0),
  } satisfies import("../oauth.ts").OAuthStore & { writes: number; clients: unknown; grants: unknown; codes: unknown };
  return store;
}

/**
 * Access-token keys without cryptography: a token is `fake.<base64url JSON claims>`, verified by reading it back
 * against the expected issuer and audience and the clock (a forged token is anything else).
 */
export function fakeAccessTokenKeys(clock: Clock) {
  const signed = new Set<string>();
  const keys = {
    signed,
    sign(claims: import("../oauth.ts").AccessTokenClaims) {
      const token = `fake.${btoa(JSON.stringify(claims)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")}`;
      signed.add(token);
      return Promise.resolve(token);
    },
    verify(token: string, expected: { issuer: string; audience: string }) {
      if (!signed.has(token)) return Promise.resolve({ ok: false as const, reason: "invalid" as const });
      const claims = JSON.parse(atob(token.slice(5).replace(/-/g, "+").replace(/_/g, "/"))) as import("../oauth.ts").AccessTokenClaims;
      if (claims.iss !== expected.issuer || claims.aud !== expected.audience) return Promise.resolve({ ok: false as const, reason: "invalid" as const });
      if (clock.nowMs() >= claims.exp * 1000) return Promise.resolve({ ok: false as const, reason: "expired" as const });
      return Promise.resolve({ ok: true as const, claims });
    },
    jwks: () => Promise.resolve({ keys: [] }),
    rotate: () => Promise.resolve("fake-kid"),
  };
  return keys satisfies import("../oauth.ts").AccessTokenKeys;
}

/**
 * An in-memory webhook store (decisions §22): endpoints, an outbox a test fills with `outboxRows`, messages and
 * deliveries; `owners` maps a subject DID to the accounts that prove it. Claims and records follow the port's rules.
 */
export function fakeWebhookStore() {
  type W = import("../webhooks.ts").WebhookEndpoint;
  type Delivery = { -readonly [K in keyof import("../webhooks.ts").DeliveryRecord]: import("../webhooks.ts").DeliveryRecord[K] } & {
    endpointId: string;
    state: "pending" | "delivered" | "failed";
    leaseHolder: string | null;
    leaseUntilMs: number | null;
  };
  const endpoints = new Map<string, W>();
  const messages = new Map<string, import("../webhooks.ts").WebhookMessage>();
  const deliveries = new Map<string, Delivery>();
  const outboxRows: import("../webhooks.ts").OutboxRow[] = [];
  const owners = new Map<string, string[]>();
  const ofAccount = (accountId: string) => [...endpoints.values()].filter((e) => e.accountId === accountId);
  const watched = (accountId: string, except: string) => ofAccount(accountId).filter((e) => e.id !== except).reduce((n, e) => n + e.subjects.length, 0);
  const store: import("../webhooks.ts").WebhookStore = {
    create(e, limits) {
      if (ofAccount(e.accountId).length >= limits.endpoints || watched(e.accountId, e.id) + e.subjects.length > limits.subjects) return Promise.resolve("limit");
      endpoints.set(e.id, e);
      return Promise.resolve("created");
    },
    list: (accountId) => Promise.resolve(ofAccount(accountId)),
    get: (accountId, id) => Promise.resolve(endpoints.get(id)?.accountId === accountId ? endpoints.get(id) : undefined),
    update(accountId, id, change, limits) {
      const e = endpoints.get(id);
      if (e === undefined || e.accountId !== accountId) return Promise.resolve(undefined);
      if (change.subjects !== undefined && watched(accountId, id) + change.subjects.length > limits.subjects) return Promise.resolve("limit" as const);
      const disabled = change.disabled ?? e.disabled;
      const next: W = {
        ...e,
        url: change.url ?? e.url,
        events: change.events ?? e.events,
        subjects: change.subjects ?? e.subjects,
        ownSubjects: change.ownSubjects ?? e.ownSubjects,
        disabled,
        failingSinceMs: disabled ? e.failingSinceMs : null,
      };
      endpoints.set(id, next);
      return Promise.resolve(next);
    },
    remove(accountId, id) {
      if (endpoints.get(id)?.accountId !== accountId) return Promise.resolve(false);
      endpoints.delete(id);
      for (const [key, d] of deliveries) if (d.endpointId === id) deliveries.delete(key);
      return Promise.resolve(true);
    },
    rotate(accountId, id, secret, previousUntilMs) {
      const e = endpoints.get(id);
      if (e === undefined || e.accountId !== accountId) return Promise.resolve(undefined);
      const next = { ...e, secret, previousSecret: e.secret, previousSecretUntilMs: previousUntilMs };
      endpoints.set(id, next);
      return Promise.resolve(next);
    },
    outbox: (limit) => Promise.resolve(outboxRows.slice(0, limit)),
    publish(ms, ds, consumed) {
      for (const m of ms) if (!messages.has(m.id)) messages.set(m.id, m);
      for (const d of ds) {
        const id = `${d.messageId}.${d.endpointId}`;
        if (deliveries.has(id)) continue;
        const m = messages.get(d.messageId)!;
        deliveries.set(id, {
          id,
          eventId: d.messageId,
          type: m.type,
          attempts: 0,
          lastStatus: null,
          nextAttemptAtMs: m.createdAtMs,
          deliveredAtMs: null,
          failedAtMs: null,
          createdAtMs: m.createdAtMs,
          endpointId: d.endpointId,
          state: "pending",
          leaseHolder: null,
          leaseUntilMs: null,
        });
      }
      for (const seq of consumed) {
        const at = outboxRows.findIndex((r) => r.seq === seq);
        if (at !== -1) outboxRows.splice(at, 1);
      }
      return Promise.resolve();
    },
    targets(subjectDid) {
      const accounts = new Set(owners.get(subjectDid) ?? []);
      return Promise.resolve([...endpoints.values()]
        .filter((e) => !e.disabled && (e.subjects.includes(subjectDid) || accounts.has(e.accountId)))
        .map((e) => ({
          endpointId: e.id,
          accountId: e.accountId,
          events: e.events,
          owned: accounts.has(e.accountId),
          watched: e.subjects.includes(subjectDid) || (e.ownSubjects && accounts.has(e.accountId)),
        })));
    },
    accountEndpoints: (accountId) => Promise.resolve(ofAccount(accountId).filter((e) => !e.disabled)),
    claim(holder, nowMs, leaseMs, limit, perEndpoint, perAccount) {
      // The SQL stores' rule (adapters/sqlite/sqlite_webhooks.ts claimableSql): bounds per endpoint and per account,
      // each account's next slot first (fewer in flight first), then the oldest.
      const byEndpoint = new Map<string, number>();
      const byAccount = new Map<string, number>();
      for (const d of deliveries.values()) {
        if (d.state !== "pending" || (d.leaseUntilMs ?? 0) <= nowMs) continue;
        byEndpoint.set(d.endpointId, (byEndpoint.get(d.endpointId) ?? 0) + 1);
        const account = endpoints.get(d.endpointId)?.accountId ?? "";
        byAccount.set(account, (byAccount.get(account) ?? 0) + 1);
      }
      const age = (a: Delivery, b: Delivery) =>
        (a.nextAttemptAtMs ?? 0) - (b.nextAttemptAtMs ?? 0) || a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
      const due = [...deliveries.values()]
        .filter((d) => d.state === "pending" && (d.nextAttemptAtMs ?? 0) <= nowMs && (d.leaseUntilMs ?? 0) <= nowMs && endpoints.get(d.endpointId)?.disabled === false)
        .sort(age);
      const endpointRank = new Map<string, number>();
      const ranked = due.flatMap((d) => {
        const rank = (endpointRank.get(d.endpointId) ?? 0) + 1;
        endpointRank.set(d.endpointId, rank);
        return rank <= perEndpoint - (byEndpoint.get(d.endpointId) ?? 0) ? [{ d, rank, account: endpoints.get(d.endpointId)!.accountId }] : [];
      });
      ranked.sort((a, b) => a.rank - b.rank || age(a.d, b.d));
      const accountRank = new Map<string, number>();
      const fits = ranked.flatMap((r) => {
        const rank = (accountRank.get(r.account) ?? 0) + 1;
        accountRank.set(r.account, rank);
        const slot = rank + (byAccount.get(r.account) ?? 0);
        return slot <= perAccount ? [{ d: r.d, slot }] : [];
      });
      fits.sort((a, b) => a.slot - b.slot || age(a.d, b.d));
      const out: import("../webhooks.ts").ClaimedDelivery[] = [];
      for (const { d } of fits.slice(0, limit)) {
        d.leaseHolder = holder;
        d.leaseUntilMs = nowMs + leaseMs;
        const e = endpoints.get(d.endpointId)!;
        out.push({
          id: d.id,
          endpointId: e.id,
          url: e.url,
          secret: e.secret,
          previousSecret: e.previousSecret,
          previousSecretUntilMs: e.previousSecretUntilMs,
          message: messages.get(d.eventId)!,
          attempts: d.attempts,
        });
      }
      return Promise.resolve(out);
    },
    record(id, holder, outcome, nowMs, disableAfterMs) {
      const d = deliveries.get(id);
      if (d === undefined || d.leaseHolder !== holder || d.state !== "pending") return Promise.resolve();
      d.attempts++;
      d.lastStatus = outcome.status;
      d.state = outcome.state === "retry" ? "pending" : outcome.state;
      d.nextAttemptAtMs = outcome.state === "retry" ? outcome.nextAttemptAtMs : null;
      d.deliveredAtMs = outcome.state === "delivered" ? nowMs : null;
      d.failedAtMs = outcome.state === "failed" ? nowMs : null;
      d.leaseHolder = null;
      d.leaseUntilMs = null;
      const e = endpoints.get(d.endpointId);
      if (e !== undefined) {
        const failingSinceMs = outcome.state === "delivered" ? null : e.failingSinceMs ?? nowMs;
        endpoints.set(e.id, { ...e, failingSinceMs, disabled: e.disabled || (failingSinceMs !== null && failingSinceMs <= nowMs - disableAfterMs) });
      }
      return Promise.resolve();
    },
    deliveries(endpointId, page) {
      const rows = [...deliveries.values()].filter((d) => d.endpointId === endpointId)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? 1 : -1))
        .filter((d) => page.after === undefined || d.createdAtMs < page.after.createdAtMs || (d.createdAtMs === page.after.createdAtMs && d.id < page.after.id));
      return Promise.resolve(rows.slice(0, page.limit));
    },
    prune(beforeMs) {
      let gone = 0;
      for (const [id, d] of deliveries) {
        if (d.state !== "pending" && d.createdAtMs < beforeMs) {
          deliveries.delete(id);
          gone++;
        }
      }
      for (const [id, m] of messages) if (m.createdAtMs < beforeMs && ![...deliveries.values()].some((d) => d.eventId === id)) messages.delete(id);
      return Promise.resolve(gone);
    },
    stats(nowMs) {
      const pending = [...deliveries.values()].filter((d) => d.state === "pending");
      const oldest = pending.length === 0 ? null : Math.min(...pending.map((d) => d.createdAtMs));
      return Promise.resolve({ pending: pending.length + outboxRows.length, oldestPendingMs: oldest === null ? null : nowMs - oldest });
    },
  };
  return { ...store, endpoints, messages, deliveryRows: deliveries, outboxRows, owners };
}

/** A webhook transport that records every POST and answers from `answer` (default 200); `check` refuses `refused` hosts. */
export function fakeWebhookTransport(options: {
  answer?: (url: string, headers: Readonly<Record<string, string>>, body: string) => import("../webhooks.ts").WebhookPost;
  refused?: Readonly<Record<string, import("../webhooks.ts").WebhookUrlRefusal>>;
} = {}) {
  const posts: { url: string; headers: Readonly<Record<string, string>>; body: string }[] = [];
  const transport: import("../webhooks.ts").WebhookTransport = {
    check(url) {
      const refusal = options.refused?.[new URL(url).hostname];
      return Promise.resolve(refusal === undefined ? { ok: true } : { ok: false, reason: refusal });
    },
    post(url, headers, body) {
      posts.push({ url, headers, body });
      return Promise.resolve(options.answer?.(url, headers, body) ?? { ok: true, status: 200 });
    },
  };
  return { ...transport, posts };
}
