import { describe, expect, test } from "bun:test";
import { createBindingAuthority } from "./mod.ts";

const CHAIN = 31337;
const A = "0x00000000000000000000000000000000000000aa";
const B = "0x00000000000000000000000000000000000000bb";
const ISSUER = "0x00000000000000000000000000000000000000cc";
const THIEF = "0x00000000000000000000000000000000000000dd";
const pkh = (address: string) => `did:pkh:eip155:${CHAIN}:${address}`;

type Binding = { uid: string; attester: string; keyId: string; time: bigint; end: bigint; revoked: boolean };
/** A binding that ends at `end` (0 for never): revoked then, or (with "expires") expired then. */
const binding = (uid: string, attester: string, names: string, time: number, end = 0, how: "revoked" | "expires" = "revoked"): Binding =>
  ({ uid, attester, keyId: pkh(names), time: BigInt(time), end: BigInt(end), revoked: how === "revoked" && end !== 0 });

/** A and B witnessed at 10; ISSUER trusted outright. */
function authority(bindings: Binding[]) {
  return createBindingAuthority({
    bindings,
    chainId: CHAIN,
    controlled: (b) => b.attester === ISSUER || ([A, B].includes(b.attester) && b.time >= 10n),
    lasting: (b) => b.attester === ISSUER,
    names: (b, controller) => b.keyId === controller,
    endOf: (b) => b.end,
    revokedAt: (b) => (b.revoked ? b.end : 0n),
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

  test("its own bindings neither cut it nor keep it in", () => {
    const ownEnded = binding("own-ended", A, A, 20, 30);
    const next = binding("next", A, THIEF, 50);
    expect(authority([ownEnded, next])(next)).toBe(true);
    const ownStanding = binding("own-standing", A, A, 20);
    const cut = binding("cut", ISSUER, A, 25, 40, "expires");
    expect(authority([ownStanding, cut, next])(next)).toBe(false);
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
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    // Few seconds, so that writes, ends and revocations often share one.
    for (let round = 0; round < 1_000; round++) {
      const bindings: Binding[] = [];
      for (let i = 0; i < 3 + random(8); i++) {
        const attester = [A, A, B, ISSUER][random(4)]!;
        const time = 10 + random(20);
        const end = random(3) === 0 ? 0 : time + random(20) - 3;
        bindings.push(binding(`b${i}`, attester, A, time, Math.max(end, 0), random(2) === 0 ? "revoked" : "expires"));
      }
      // A probe at each second: A's binding of another key counts exactly when A's authority has not ended.
      const probes = Array.from({ length: 60 }, (_, t) => binding(`probe-${t}`, A, THIEF, t));
      const counts = authority([...bindings, ...probes]);
      const naming = bindings.filter(counts);
      const got = authority([...bindings, ...probes]).selfCuts(naming, 60n);
      for (const self of naming.filter((b) => b.attester === A)) {
        let expected: bigint | undefined;
        for (let t = Number(self.time); t < 60 && expected === undefined; t++) if (!counts(probes[t]!)) expected = BigInt(t);
        expect([self.uid, got.get(self)]).toEqual([self.uid, expected]);
      }
    }
  });

  test("its own revocation is no one else's cut; an attester the caller trusts outright is never read as self-binding", () => {
    const selfOnly = binding("self-only", A, A, 20, 30);
    expect(cutsOf([selfOnly], [selfOnly], 60)).toEqual({});
    const cut = binding("cut", B, ISSUER, 20, 40);
    const own = binding("own", ISSUER, ISSUER, 30);
    expect(cutsOf([cut, own], [cut, own], 50)).toEqual({});
  });
});
