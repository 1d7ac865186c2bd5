import { describe, expect, test } from "bun:test";
import { createBindingAuthority } from "./mod.ts";

const CHAIN = 31337;
const A = "0x00000000000000000000000000000000000000aa";
const B = "0x00000000000000000000000000000000000000bb";
const ISSUER = "0x00000000000000000000000000000000000000cc";
const THIEF = "0x00000000000000000000000000000000000000dd";
const pkh = (address: string) => `did:pkh:eip155:${CHAIN}:${address}`;

type Binding = { uid: string; attester: string; keyId: string; time: bigint; end: bigint };
const binding = (uid: string, attester: string, names: string, time: number, end = 0): Binding =>
  ({ uid, attester, keyId: pkh(names), time: BigInt(time), end: BigInt(end) });

/** A and B witnessed at 10; ISSUER trusted outright. */
function authority(bindings: Binding[]) {
  return createBindingAuthority({
    bindings,
    chainId: CHAIN,
    controlled: (b) => b.attester === ISSUER || ([A, B].includes(b.attester) && b.time >= 10n),
    lasting: (b) => b.attester === ISSUER,
    names: (b, controller) => b.keyId === controller,
    endOf: (b) => b.end,
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
    const cut = binding("cut", ISSUER, A, 30, 60);
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

  test("its own revocation is no one else's cut; an attester the caller trusts outright is never read as self-binding", () => {
    const selfOnly = binding("self-only", A, A, 20, 30);
    expect(cutsOf([selfOnly], [selfOnly], 60)).toEqual({});
    const cut = binding("cut", B, ISSUER, 20, 40);
    const own = binding("own", ISSUER, ISSUER, 30);
    expect(cutsOf([cut, own], [cut, own], 50)).toEqual({});
  });
});
