/**
 * Who may still bind a key: the one rule key status, controller authorization, artifact trust and the x402
 * verifier apply on top of their own "did the attester control the subject when it wrote the binding".
 *
 * A controller witness cannot be revoked, so a key binding's revocation (or expiry) is the only way a subject cuts
 * off a controller it no longer trusts. A cut that the controller could undo would be no cut: a stolen controller key
 * wrote a new binding naming itself, or naming the thief's key, and its claims were "verified" again, the ones it made
 * while cut off included. So:
 * - A controller's authority has **ended** at a time when it was cut by then, and no binding naming it by another
 *   attester that counts stands then, written at or after that cut. It was cut by the latest of: a revocation that
 *   ended a binding naming it (another's that counts, or one it wrote of itself as a controller: revoking its own
 *   binding is how the holder of a lone controller key says it was stolen; a revocation after the binding expired took
 *   nothing away and is none), and the latest end of another attester's bindings of it when none of that attester's
 *   still stands, nor one by an attester trusted outright (so a renewal written before the old binding expired keeps it
 *   in, as its writer meant; another controller's older binding does not, not even a second stolen key's). Its own
 *   expiries neither cut nor keep it.
 * - A binding whose attester's authority had ended when it wrote it does not count. So a controller never reopens
 *   its own window, and binds nothing, while it is cut off; another controller (or whoever the caller trusts
 *   outright) may bind it again.
 * - Attesters the caller trusts outright (`lasting`: the subject itself, an approved issuer, a controller the
 *   subject's endpoints publish now) are never cut off by a binding.
 *
 * A circle of controllers binding each other is read as ended (the conservative answer). Each binding and each
 * (controller, time) is decided once per evaluation: the work grows with other attesters' bindings naming a controller
 * times the distinct times (blocks) they were written at, so a flood in one `multiAttest` costs one pass, and a
 * controller's bindings of itself (a stolen key can write thousands) cost a binary search each.
 */
/** What the rule reads of a binding. */
export type AuthorityBinding = {
  readonly uid: string;
  readonly attester: string;
  /** Chain time, Unix seconds. */
  readonly time: bigint;
};

/** The caller's view of its bindings. */
export type BindingAuthorityRules<B extends AuthorityBinding> = {
  readonly bindings: readonly B[];
  /** The did:pkh the rule names an attester by (the chain the bindings were read on). */
  readonly chainId: number;
  /** The caller's own rule: whether the attester controlled the subject when it wrote the binding. */
  readonly controlled: (binding: B) => boolean;
  /** Attesters no binding cuts off (see the file's comment). */
  readonly lasting: (binding: B) => boolean;
  /** Whether the binding names the controller (its `keyId`, or its JWK for a did:jwk). */
  readonly names: (binding: B, controllerDid: string) => boolean;
  /** When the binding stopped granting anything: its revocation or expiry, whichever came first; 0n for never. */
  readonly endOf: (binding: B) => bigint;
  /** When the binding was revoked (0n for never): a revocation is a cut that only a binding written since undoes. */
  readonly revokedAt: (binding: B) => bigint;
};

/** `counts(binding)`, with the bindings that decide a controller's status ({@link createBindingAuthority}). */
export type BindingAuthority<B extends AuthorityBinding> = ((binding: B) => boolean) & {
  /**
   * Of the counting bindings naming one controller (written by `at`), the ones the controller wrote of itself
   * before its authority ended (by the rule above, over the caller's bindings, by `at`), each with the first time
   * at or after it was written that the authority had ended. Its status reads such a binding as ended there (a
   * revocation it did not make). Only counting bindings may be given: one that does not count gets no cut. A stolen
   * key's first move was a binding of itself, written while it still had authority: that binding then stood as the
   * newest, and the subject's revocation of its own binding never cut the key off (key status `active`, controller
   * authorization without `until`, its later claims "verified"). Ended, not left out: a controller's binding of
   * itself still narrows its own authority (a newer purpose list), and one left out would hand the status back to
   * an older, wider binding. One written after another attester bound it again stands until the next cut.
   */
  readonly selfCuts: (naming: readonly B[], at: bigint) => Map<B, bigint>;
};

/** Returns `counts(binding)`: the caller's rule and the attester's authority not ended when it wrote the binding. */
export function createBindingAuthority<B extends AuthorityBinding>(rules: BindingAuthorityRules<B>): BindingAuthority<B> {
  const counted = new Map<B, boolean>();
  const decided = new Map<string, boolean>();
  const naming = new Map<string, Naming<B>>();

  /**
   * What the rule reads of the bindings naming an address's did:pkh (once per address): others' bindings, oldest
   * first, each read once (a flood by a second stolen key is many passes of `ended`), and the revocations that ended
   * a binding it wrote of itself, under the caller's rule (one written before its witness is none of its authority),
   * at the later of revocation and write, ascending.
   */
  const namingOf = (address: string): Naming<B> => {
    let found = naming.get(address);
    if (found === undefined) {
      const controller = `did:pkh:eip155:${rules.chainId}:${address}`;
      const all = rules.bindings.filter((b) => rules.names(b, controller));
      const others = all.filter((b) => b.attester.toLowerCase() !== address)
        .sort((x, y) => (x.time < y.time ? -1 : x.time > y.time ? 1 : 0))
        .map((b) => ({ b, writer: b.attester.toLowerCase(), end: rules.endOf(b), revoked: revocationOf(b), lasting: rules.lasting(b) }));
      const ownRevocations = all.filter((b) => b.attester.toLowerCase() === address && revocationOf(b) !== 0n && rules.controlled(b))
        .map((b) => (revocationOf(b) > b.time ? revocationOf(b) : b.time)).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      found = { others, ownRevocations };
      naming.set(address, found);
    }
    return found;
  };

  /** When a revocation ended the binding (0n when none did: never revoked, or revoked only after it had expired). */
  const revocationOf = (b: B): bigint => {
    const revoked = rules.revokedAt(b);
    return revoked !== 0n && revoked === rules.endOf(b) ? revoked : 0n;
  };

  const counts = (binding: B): boolean => {
    const known = counted.get(binding);
    if (known !== undefined) return known;
    const result = rules.controlled(binding) && (rules.lasting(binding) || !ended(binding.attester.toLowerCase(), binding.time));
    counted.set(binding, result);
    return result;
  };

  const ended = (address: string, time: bigint): boolean => {
    const key = `${address}@${time}`;
    const known = decided.get(key);
    if (known !== undefined) return known;
    // Asked again while deciding it: a circle, read as ended.
    decided.set(key, true);
    const { others, ownRevocations } = namingOf(address);
    let revokedAt = lastAtOrBefore(ownRevocations, time) ?? 0n;
    // Per attester: its latest end by `time`, and whether one of its bindings of the controller still stands.
    const lastEnd = new Map<string, bigint>();
    const stands = new Set<string>();
    let lastingStands = false;
    let newestStanding = -1n;
    for (const entry of others) {
      if (entry.b.time > time) break;
      if (!counts(entry.b)) continue;
      if (entry.revoked !== 0n && entry.revoked <= time && entry.revoked > revokedAt) revokedAt = entry.revoked;
      if (entry.end !== 0n && entry.end <= time) {
        if (entry.end > (lastEnd.get(entry.writer) ?? 0n)) lastEnd.set(entry.writer, entry.end);
      } else {
        stands.add(entry.writer);
        if (entry.lasting) lastingStands = true;
        if (entry.b.time > newestStanding) newestStanding = entry.b.time;
      }
    }
    let cut = revokedAt;
    if (!lastingStands) for (const [writer, end] of lastEnd) if (!stands.has(writer) && end > cut) cut = end;
    const result = cut !== 0n && newestStanding < cut;
    decided.set(key, result);
    return result;
  };

  const own = (b: B) => rules.names(b, `did:pkh:eip155:${rules.chainId}:${b.attester.toLowerCase()}`);
  const selfCuts = (naming: readonly B[], at: bigint): Map<B, bigint> => {
    const cuts = new Map<B, bigint>();
    const targets = naming.filter((b) => own(b) && !rules.lasting(b));
    if (targets.length === 0) return cuts;
    const address = targets[0]!.attester.toLowerCase();
    const { others, ownRevocations } = namingOf(address);
    const endings = endedTimes(others.filter((entry) => entry.b.time <= at && counts(entry.b)), ownRevocations.filter((t) => t <= at), at);
    if (endings.length === 0) return cuts;
    for (const b of targets) {
      const first = firstAtOrAfter(endings, b.time);
      if (first !== undefined) cuts.set(b, first);
    }
    return cuts;
  };

  return Object.assign(counts, { selfCuts });
}

/** One binding of a controller by another attester, as the rule reads it. */
type Entry<B> = {
  readonly b: B;
  readonly writer: string;
  readonly end: bigint;
  /** When a revocation ended it; 0n for none. */
  readonly revoked: bigint;
  readonly lasting: boolean;
};

/** What {@link createBindingAuthority} reads of the bindings naming one address. */
type Naming<B> = { readonly others: readonly Entry<B>[]; readonly ownRevocations: readonly bigint[] };

/**
 * The times (ascending, by `at`) at which a controller reads as ended (the rule of `ended`, over `others`' counting
 * bindings of it and its `ownRevocations`), in one sweep over their writes, ends and revocations: O(n log n + n × w)
 * for n bindings by w attesters, a flood included.
 */
function endedTimes<B extends AuthorityBinding>(others: readonly Entry<B>[], ownRevocations: readonly bigint[], at: bigint): bigint[] {
  // Kinds in the order they apply within one second: written, then ended (an end at t no longer stands at t), then
  // revoked (one written at the revocation's second stands, as in `ended`). A time is the later of it and the write.
  type Event = { readonly t: bigint; readonly kind: 0 | 1 | 2; readonly entry: Entry<B> | undefined; readonly value: bigint };
  const events: Event[] = ownRevocations.map((t) => ({ t, kind: 2, entry: undefined, value: t }));
  for (const entry of others) {
    const time = entry.b.time;
    events.push({ t: time, kind: 0, entry, value: 0n });
    if (entry.end !== 0n && entry.end <= at) events.push({ t: entry.end > time ? entry.end : time, kind: 1, entry, value: entry.end });
    if (entry.revoked !== 0n && entry.revoked <= at) events.push({ t: entry.revoked > time ? entry.revoked : time, kind: 2, entry, value: entry.revoked });
  }
  events.sort((x, y) => (x.t !== y.t ? (x.t < y.t ? -1 : 1) : x.kind - y.kind));
  // Standing bindings in the order written (writes come in time order): the newest is the last one still standing.
  const written: Entry<B>[] = [];
  const standing = new Set<Entry<B>>();
  const standingBy = new Map<string, number>();
  let lastingStanding = 0;
  const lastEnd = new Map<string, bigint>();
  let revokedAt = 0n;
  const out: bigint[] = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const entry = e.entry;
    if (e.kind === 0 && entry !== undefined) {
      written.push(entry);
      if (entry.end === 0n || entry.end > entry.b.time) {
        standing.add(entry);
        standingBy.set(entry.writer, (standingBy.get(entry.writer) ?? 0) + 1);
        if (entry.lasting) lastingStanding++;
      }
    } else if (e.kind === 1 && entry !== undefined) {
      if (standing.delete(entry)) {
        standingBy.set(entry.writer, standingBy.get(entry.writer)! - 1);
        if (entry.lasting) lastingStanding--;
      }
      if (e.value > (lastEnd.get(entry.writer) ?? 0n)) lastEnd.set(entry.writer, e.value);
    } else if (e.value > revokedAt) {
      revokedAt = e.value;
    }
    if (i + 1 < events.length && events[i + 1]!.t === e.t) continue;
    let cut = revokedAt;
    if (lastingStanding === 0) for (const [w, end] of lastEnd) if ((standingBy.get(w) ?? 0) === 0 && end > cut) cut = end;
    while (written.length > 0 && !standing.has(written[written.length - 1]!)) written.pop();
    const newest = written.length > 0 ? written[written.length - 1]!.b.time : -1n;
    if (cut !== 0n && newest < cut) out.push(e.t);
  }
  return out;
}

/** The last of `sorted` (ascending) at or before `time`, by binary search. */
function lastAtOrBefore(sorted: readonly bigint[], time: bigint): bigint | undefined {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= time) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 ? sorted[lo - 1] : undefined;
}

/** The first of `sorted` (ascending) at or after `time`, by binary search: selfCuts stays O((n + m) log n). */
function firstAtOrAfter(sorted: readonly bigint[], time: bigint): bigint | undefined {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < time) lo = mid + 1;
    else hi = mid;
  }
  return sorted[lo];
}

/** The earliest of times that end something (Unix seconds), 0 meaning "never"; 0n when none ends. */
export function earliestEnd(...times: readonly bigint[]): bigint {
  let earliest = 0n;
  for (const t of times) if (t !== 0n && (earliest === 0n || t < earliest)) earliest = t;
  return earliest;
}
