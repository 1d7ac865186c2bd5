import { describe, expect, test } from "bun:test";
import { createBindingAuthority } from "./mod.ts";

const CHAIN = 31337;
const A = "0x00000000000000000000000000000000000000aa";
const B = "0x00000000000000000000000000000000000000bb";
const ISSUER = "0x00000000000000000000000000000000000000cc";
const THIEF = "0x00000000000000000000000000000000000000dd";
const C = "0x00000000000000000000000000000000000000c1";
const pkh = (address: string) => `did:pkh:eip155:${CHAIN}:${address}`;

type Binding = { uid: string; attester: string; keyId: string; time: bigint; end: bigint; revokedAt: bigint };
/** A binding that ends at `end` (0 for never): revoked then, or (with "expires") expired then. */
const binding = (uid: string, attester: string, names: string, time: number, end = 0, how: "revoked" | "expires" = "revoked"): Binding =>
  ({ uid, attester, keyId: pkh(names), time: BigInt(time), end: BigInt(end), revokedAt: how === "revoked" ? BigInt(end) : 0n });

/** A, B and C witnessed at 10; ISSUER trusted outright. */
function authority(bindings: Binding[]) {
  return createBindingAuthority({
    bindings,
    chainId: CHAIN,
    controlled: (b) => b.attester === ISSUER || ([A, B, C].includes(b.attester) && b.time >= 10n),
    lasting: (b) => b.attester === ISSUER,
    names: (b, controller) => b.keyId === controller,
    endOf: (b) => b.end,
    revokedAt: (b) => b.revokedAt,
  });
}

describe("createBindingAuthority: a controller cut off by a binding's end binds nothing after it", () => {
  test("a revoked controller's new binding of itself does not count; its bindings from before the cut still do", () => {
    const before = binding("before", A, THIEF, 20);
    const cut = binding("cut", ISSUER, A, 30, 40);
    const self = binding("self", A, A, 50);
    const counts = authority([before, cut, self]);
    expect([counts(before), counts(cut), counts(self)]).toEqual([true, true, false]);
  });

  test("nor does its binding of another key after the cut", () => {
    const cut = binding("cut", ISSUER, A, 30, 40);
    const thief = binding("thief", A, THIEF, 50);
    expect(authority([cut, thief])(thief)).toBe(false);
  });

  test("an expiry cuts as a revocation does; before it ends, the controller still binds", () => {
    const cut = binding("cut", ISSUER, A, 30, 60, "expires");
    const during = binding("during", A, THIEF, 50);
    const after = binding("after", A, THIEF, 70);
    const counts = authority([cut, during, after]);
    expect([counts(during), counts(after)]).toEqual([true, false]);
  });

  test("another controller (or the issuer) binding it again after the cut gives it its authority back", () => {
    const cut = binding("cut", ISSUER, A, 30, 40);
    const again = binding("again", B, A, 45);
    const next = binding("next", A, THIEF, 50);
    expect(authority([cut, again, next])(next)).toBe(true);
    const byIssuer = binding("by-issuer", ISSUER, A, 45);
    expect(authority([cut, byIssuer, next])(next)).toBe(true);
  });

  test("a binding again from before the cut does not undo it, nor one that has itself ended", () => {
    const cut = binding("cut", ISSUER, A, 30, 40);
    const earlier = binding("earlier", B, A, 20);
    const ended = binding("ended", B, A, 45, 48);
    const next = binding("next", A, THIEF, 50);
    expect(authority([earlier, cut, next])(next)).toBe(false);
    expect(authority([cut, ended, next])(next)).toBe(false);
  });

  test("a renewal written before an expiry keeps it; one written before a revocation does not", () => {
    const next = binding("next", A, THIEF, 50);
    const renewal = binding("renewal", ISSUER, A, 35);
    expect(authority([binding("expired", ISSUER, A, 30, 40, "expires"), renewal, next])(next)).toBe(true);
    expect(authority([binding("revoked", ISSUER, A, 30, 40), renewal, next])(next)).toBe(false);
    // Nor one that has itself expired by then.
    const short = binding("short", B, A, 35, 45, "expires");
    expect(authority([binding("expired", ISSUER, A, 30, 40, "expires"), short, next])(next)).toBe(false);
  });

  test("a later expiry does not undo a revocation: only a binding written since the latest revocation reopens", () => {
    const older = binding("older", B, A, 20);
    const revoked = binding("revoked", ISSUER, A, 22, 40);
    const expiring = binding("expiring", ISSUER, A, 25, 60, "expires");
    const next = binding("next", A, THIEF, 70);
    expect(authority([older, revoked, expiring, next])(next)).toBe(false);
    const again = binding("again", B, A, 45, 55, "expires");
    const during = binding("during", A, THIEF, 50);
    const counts = authority([older, revoked, expiring, again, during, next]);
    expect([counts(during), counts(next)]).toEqual([true, false]);
  });

  test("a revocation cuts even beside a newer binding by the same writer; revoking first and binding after does not", () => {
    const next = binding("next", A, THIEF, 80);
    const newer = binding("newer", ISSUER, A, 60);
    expect(authority([binding("old", ISSUER, A, 30, 70), newer, next])(next)).toBe(false);
    const rebound = binding("rebound", ISSUER, A, 75);
    expect(authority([binding("old", ISSUER, A, 30, 70), rebound, next])(next)).toBe(true);
  });

  test("revoking its own binding of itself cuts it (a lone controller's holder saying it was stolen); its own expiry does not", () => {
    const next = binding("next", A, THIEF, 50);
    const again = binding("again", A, A, 51);
    const revokedOwn = binding("revoked-own", A, A, 20, 30);
    const counts = authority([revokedOwn, next, again]);
    expect([counts(next), counts(again)]).toEqual([false, false]);
    expect(authority([binding("expired-own", A, A, 20, 30, "expires"), next])(next)).toBe(true);
    // Only another's binding written since undoes it.
    expect(authority([revokedOwn, binding("rebound", B, A, 40), next])(next)).toBe(true);
    expect(authority([revokedOwn, binding("older", B, A, 25), next])(next)).toBe(false);
  });

  test("revoking its own binding written before it was a controller (before its witness) is no cut", () => {
    const early = binding("early", A, A, 5, 6);
    const next = binding("next", A, THIEF, 40);
    expect(authority([early, next])(next)).toBe(true);
  });

  test("revoking a binding that had already expired is no cut (housekeeping after a renewal)", () => {
    const expiredThenRevoked = { ...binding("old", B, A, 20, 40, "expires"), revokedAt: 50n };
    const renewal = binding("renewal", B, A, 35);
    const next = binding("next", A, THIEF, 55);
    expect(authority([expiredThenRevoked, renewal, next])(next)).toBe(true);
    // Revoked while it still stood, it is a cut.
    expect(authority([{ ...binding("old", B, A, 20, 45), revokedAt: 45n }, renewal, next])(next)).toBe(false);
  });

  test("a binding by an attester the caller trusts outright, standing, keeps it in past another's expiry", () => {
    const trusted = binding("trusted", ISSUER, A, 20);
    const temporary = binding("temporary", B, A, 25, 40, "expires");
    const next = binding("next", A, THIEF, 50);
    expect(authority([trusted, temporary, next])(next)).toBe(true);
    // Not past a revocation: that cuts whatever else stands.
    expect(authority([trusted, binding("revoked", B, A, 25, 40), next])(next)).toBe(false);
  });

  test("nor does its own binding keep it in", () => {
    const next = binding("next", A, THIEF, 50);
    const ownStanding = binding("own-standing", A, A, 20);
    const cut = binding("cut", ISSUER, A, 25, 40, "expires");
    expect(authority([ownStanding, cut, next])(next)).toBe(false);
  });

  test("an expiry is undone only by its own writer's binding still standing, not another's older one (two stolen keys)", () => {
    // The owner's bindings of A and B expire at 40; a thief holding both had them bind each other at 30.
    const OWNER = ISSUER;
    const bindings = [
      binding("oa", OWNER, A, 20, 40, "expires"),
      binding("ob", OWNER, B, 20, 40, "expires"),
      binding("ab", A, B, 30),
      binding("ba", B, A, 30),
    ];
    const byA = binding("thief-a", A, THIEF, 50);
    const byB = binding("thief-b", B, THIEF, 50);
    const counts = authority([...bindings, byA, byB]);
    expect([counts(byA), counts(byB)]).toEqual([false, false]);
    // B, revoked by the owner at 35, had bound A at 30: that does not keep A in past the owner's expiry either.
    const stolenB = [binding("ob", OWNER, B, 15, 35), binding("ba", B, A, 30), binding("oa", OWNER, A, 20, 40, "expires")];
    expect(authority([...stolenB, byA])(byA)).toBe(false);
  });

  test("two cut-off controllers binding each other reopen neither (a circle reads as ended)", () => {
    const cutA = binding("cut-a", ISSUER, A, 30, 40);
    const cutB = binding("cut-b", ISSUER, B, 30, 40);
    const aBindsB = binding("a-b", A, B, 50);
    const bBindsA = binding("b-a", B, A, 50);
    const next = binding("next", A, THIEF, 60);
    const counts = authority([cutA, cutB, aBindsB, bBindsA, next]);
    expect([counts(aBindsB), counts(bBindsA), counts(next)]).toEqual([false, false, false]);
  });

  test("the caller's own rule still comes first: an attester it does not take never counts", () => {
    const stranger = binding("stranger", THIEF, THIEF, 50);
    expect(authority([stranger])(stranger)).toBe(false);
  });

  test("a flood of bindings by a cut-off controller counts for nothing (each controller and time is decided once)", () => {
    // Many bindings a block (multiAttest), over many blocks: the work grows with the bindings times the blocks.
    const bindings = [binding("cut", ISSUER, A, 30, 40)];
    for (let i = 0; i < 5_000; i++) bindings.push(binding(`self-${i}`, A, i % 2 === 0 ? A : THIEF, 50 + (i % 100)));
    const counts = authority(bindings);
    expect(bindings.filter(counts).map((b) => b.uid)).toEqual(["cut"]);
  });
});

describe("createBindingAuthority().selfCuts: a controller's binding of itself never outlasts another's cut", () => {
  const cutsOf = (bindings: Binding[], naming: Binding[], at: number) =>
    Object.fromEntries([...authority(bindings).selfCuts(naming, BigInt(at))].map(([b, end]) => [b.uid, end]));

  test("one written before another attester's binding naming it ended ends there; the others are untouched", () => {
    const owners = binding("owners", B, A, 20, 40);
    const self = binding("self", A, A, 30);
    expect(cutsOf([owners, self], [owners, self], 50)).toEqual({ self: 40n });
    // Before the cut (at 35) nothing has ended it: the cut's time counts only once it has come.
    expect(cutsOf([owners, self], [owners, self], 35)).toEqual({});
  });

  test("the first end after it is its end; one written after another bound it again stands until the next", () => {
    const owners = binding("owners", B, A, 20, 40);
    const again = binding("again", B, A, 45, 70);
    const early = binding("early", A, A, 30);
    const late = binding("late", A, A, 50);
    expect(cutsOf([owners, again, early, late], [owners, again, early, late], 60)).toEqual({ early: 40n });
    expect(cutsOf([owners, again, early, late], [owners, again, early, late], 80)).toEqual({ early: 40n, late: 70n });
  });

  test("among many ends, in any order, each is cut at the first end at or after it was written", () => {
    const ends = [70, 40, 55, 40, 90].map((end, i) => binding(`end-${i}`, B, A, 10 + i, end));
    const selfs = [39, 40, 41, 56, 91].map((time) => binding(`self-${time}`, A, A, time));
    const all = [...ends, ...selfs];
    expect(cutsOf(all, all, 100)).toEqual({ "self-39": 40n, "self-40": 40n, "self-41": 55n, "self-56": 70n });
  });

  test("another's binding standing past an expiry keeps it in; a revocation cuts until another binds it again", () => {
    const owners = binding("owners", B, A, 20, 40, "expires");
    const renewal = binding("renewal", B, A, 35);
    const self = binding("self", A, A, 30);
    expect(cutsOf([owners, renewal, self], [owners, renewal, self], 50)).toEqual({});
    const revoked = binding("revoked", B, A, 20, 40);
    expect(cutsOf([revoked, renewal, self], [revoked, renewal, self], 50)).toEqual({ self: 40n });
    const later = binding("later", ISSUER, A, 42, 60, "expires");
    expect(cutsOf([revoked, later, self], [revoked, later, self], 70)).toEqual({ self: 40n });
    const selfAfter = binding("self-after", A, A, 45);
    expect(cutsOf([revoked, later, selfAfter], [revoked, later, selfAfter], 70)).toEqual({ "self-after": 60n });
  });

  test("agrees with the rule that decides whether its bindings count, over random histories", () => {
    let seed = 12345;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    // Few seconds, so that writes, ends and revocations often share one; controllers binding each other; expiries
    // before the write, revocations after the expiry.
    for (let round = 0; round < 5_000; round++) {
      const bindings: Binding[] = [];
      for (let i = 0, n = 2 + random(9); i < n; i++) {
        const attester = [A, A, B, C, ISSUER][random(5)]!;
        const named = [A, A, A, B, C][random(5)]!;
        const time = 8 + random(20);
        const expiry = random(3) === 0 ? 0 : Math.max(1, time + random(20) - 5);
        const revocation = random(3) === 0 ? time + random(25) : 0;
        const end = expiry === 0 ? revocation : revocation === 0 ? expiry : Math.min(expiry, revocation);
        bindings.push({ ...binding(`b${i}`, attester, named, time, end), revokedAt: BigInt(revocation) });
      }
      for (const controller of [A, B]) {
        // A probe at each second: the controller's binding of another key counts exactly when it has not ended.
        const probes = Array.from({ length: 60 }, (_, t) => binding(`probe-${t}`, controller, THIEF, t));
        const counts = authority([...bindings, ...probes]);
        const naming = bindings.filter((b) => b.keyId === pkh(controller) && counts(b));
        const got = authority([...bindings, ...probes]).selfCuts(naming, 60n);
        for (const self of naming.filter((b) => b.attester === controller)) {
          let expected: bigint | undefined;
          for (let t = Number(self.time); t < 60 && expected === undefined; t++) if (!counts(probes[t]!)) expected = BigInt(t);
          if (got.get(self) !== expected) expect({ round, controller, self: self.uid, cut: got.get(self) }).toEqual({ round, controller, self: self.uid, cut: expected });
        }
      }
    }
  });

  test("its own expiry is no cut, its own revocation is; an attester the caller trusts outright is never read as self-binding", () => {
    const expiring = binding("expiring", A, A, 20, 30, "expires");
    const later = binding("later", A, A, 25);
    expect(cutsOf([expiring, later], [expiring, later], 60)).toEqual({});
    const revoked = binding("revoked", A, A, 20, 30);
    expect(cutsOf([revoked, later], [revoked, later], 60)).toEqual({ revoked: 30n, later: 30n });
    const cut = binding("cut", B, ISSUER, 20, 40);
    const own = binding("own", ISSUER, ISSUER, 30);
    expect(cutsOf([cut, own], [cut, own], 50)).toEqual({});
  });
});
