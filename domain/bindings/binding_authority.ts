/**
 * Who may still bind a key: the one rule key status, controller authorization, artifact trust and the x402
 * verifier apply on top of their own "did the attester control the subject when it wrote the binding".
 *
 * A controller witness cannot be revoked, so a key binding's revocation (or expiry) is the only way a subject cuts
 * off a controller it no longer trusts. A cut that the controller could undo would be no cut: a stolen controller key
 * wrote a new binding naming itself, or naming the thief's key, and its claims were "verified" again, the ones it made
 * while cut off included. So:
 * - A controller's authority has **ended** at a time when a binding naming it that counts had ended (revoked or
 *   expired) by then, and no binding naming it written since that end, by another attester, counts and still stands.
 * - A binding whose attester's authority had ended when it wrote it does not count. So a controller never reopens
 *   its own window, and binds nothing, while it is cut off; another controller (or whoever the caller trusts
 *   outright) may bind it again.
 * - Attesters the caller trusts outright (`lasting`: the subject itself, an approved issuer, a controller the
 *   subject's endpoints publish now) are never cut off by a binding.
 *
 * A circle of controllers binding each other is read as ended (the conservative answer). Each binding and each
 * (controller, time) is decided once per evaluation: the work grows with the bindings naming a controller times the
 * distinct times (blocks) they were written at, so a flood in one `multiAttest` costs one pass.
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
};

/** `counts(binding)`, with the bindings that decide a controller's status ({@link createBindingAuthority}). */
export type BindingAuthority<B extends AuthorityBinding> = ((binding: B) => boolean) & {
  /**
   * Of the counting bindings naming one controller (written by `at`), the ones the controller wrote of itself before
   * another attester's binding naming it ended (revoked or expired by `at`), each with that end: the first such end
   * after it was written. Its status reads such a binding as ended there (a revocation it did not make). A stolen key's
   * first move was a binding of itself, written while it still had authority: that binding then stood as the newest,
   * and the subject's revocation of its own binding never cut the key off (key status `active`, controller
   * authorization without `until`, its later claims "verified"). Ended, not left out: a controller's binding of itself
   * still narrows its own authority (a newer purpose list), and one left out would hand the status back to an older,
   * wider binding. One written after another attester bound it again stands until the next end.
   */
  readonly selfCuts: (naming: readonly B[], at: bigint) => Map<B, bigint>;
};

/** Returns `counts(binding)`: the caller's rule and the attester's authority not ended when it wrote the binding. */
export function createBindingAuthority<B extends AuthorityBinding>(rules: BindingAuthorityRules<B>): BindingAuthority<B> {
  const counted = new Map<B, boolean>();
  const decided = new Map<string, boolean>();
  const naming = new Map<string, B[]>();

  /** The bindings naming an address's did:pkh, oldest first (read once per address). */
  const namingOf = (address: string): B[] => {
    let list = naming.get(address);
    if (list === undefined) {
      const controller = `did:pkh:eip155:${rules.chainId}:${address}`;
      list = rules.bindings.filter((b) => rules.names(b, controller)).sort((x, y) => (x.time < y.time ? -1 : x.time > y.time ? 1 : 0));
      naming.set(address, list);
    }
    return list;
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
    const standing: B[] = [];
    let cutAt: bigint | null = null;
    for (const b of namingOf(address)) {
      if (b.time > time) break;
      if (!counts(b)) continue;
      standing.push(b);
      const end = rules.endOf(b);
      if (end !== 0n && end <= time && (cutAt === null || end > cutAt)) cutAt = end;
    }
    const result = cutAt !== null && !standing.some((b) => {
      const end = rules.endOf(b);
      return b.time >= cutAt && b.attester.toLowerCase() !== address && (end === 0n || end > time);
    });
    decided.set(key, result);
    return result;
  };

  const isSelf = (b: B) => !rules.lasting(b) && rules.names(b, `did:pkh:eip155:${rules.chainId}:${b.attester.toLowerCase()}`);
  const selfCuts = (naming: readonly B[], at: bigint): Map<B, bigint> => {
    const ends: bigint[] = [];
    for (const b of naming) {
      if (isSelf(b)) continue;
      const end = rules.endOf(b);
      if (end !== 0n && end <= at) ends.push(end);
    }
    const cuts = new Map<B, bigint>();
    if (ends.length === 0) return cuts;
    for (const b of naming) {
      if (!isSelf(b)) continue;
      let first: bigint | null = null;
      for (const end of ends) if (end >= b.time && (first === null || end < first)) first = end;
      if (first !== null) cuts.set(b, first);
    }
    return cuts;
  };

  return Object.assign(counts, { selfCuts });
}

/** The earliest of times that end something (Unix seconds), 0 meaning "never"; 0n when none ends. */
export function earliestEnd(...times: readonly bigint[]): bigint {
  let earliest = 0n;
  for (const t of times) if (t !== 0n && (earliest === 0n || t < earliest)) earliest = t;
  return earliest;
}
