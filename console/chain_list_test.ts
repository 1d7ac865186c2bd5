import { describe, expect, test } from "bun:test";
import { pickerChains } from "./_chain_list.ts";

const PAGE = { chainId: 31337, name: "ATS Devnet" };
const chains = { "eip155:31337": { name: "ATS Devnet" }, "31338": { name: "ATS Devnet 2" }, "eip155:8453": { name: "Base" } };

describe("pickerChains() (decisions §30: the console's chain picker)", () => {
  test("no list of served chains (today's answer, or a failed read): the page's one chain, and nothing is sent", () => {
    const one = { chains: [{ chainId: 31337, caip2: "eip155:31337", name: "ATS Devnet", isDefault: true }], listed: false };
    expect(pickerChains({ version: 1, chains }, PAGE)).toEqual(one);
    expect(pickerChains(undefined, PAGE)).toEqual(one);
    expect(pickerChains({ servedChains: "eip155:1" }, PAGE)).toEqual(one);
    expect(pickerChains({ servedChains: [{ role: "proofs", caip2: "eip155:8453" }, "nonsense"] }, PAGE)).toEqual(one);
  });

  test("a list: its attestation chains in order, named from the list, the anchors or the page; proof chains and repeats left out", () => {
    const got = pickerChains({
      chains,
      servedChains: [
        { caip2: "eip155:31337", role: "attestations" },
        { chainId: 31338, role: "attestations" },
        { caip2: "eip155:8453", role: "proofs" },
        "eip155:31338",
        { chainId: "10", name: "OP" },
        "cosmos:1",
      ],
    }, PAGE);
    expect(got.listed).toBe(true);
    expect(got.chains.map((c) => [c.caip2, c.name, c.isDefault])).toEqual([
      ["eip155:31337", "ATS Devnet", true],
      ["eip155:31338", "ATS Devnet 2", false],
      ["eip155:10", "OP", false],
    ]);
  });

  test("the default: the item marked default, else the answer's defaultChain, else the page's chain, else the first", () => {
    const defaultOf = (anchors: unknown) => pickerChains(anchors, PAGE).chains.find((c) => c.isDefault)?.chainId;
    expect(defaultOf({ servedChains: ["31337", { chainId: 31338, default: true }] })).toBe(31338);
    expect(defaultOf({ servedChains: ["31337", "31338"], defaultChain: "eip155:31338" })).toBe(31338);
    expect(defaultOf({ servedChains: ["31338", "31337"] })).toBe(31337);
    expect(defaultOf({ servedChains: ["31338", "8453"] })).toBe(31338);
    expect(pickerChains({ servedChains: ["8453"] }, PAGE).chains[0]!.name).toBe("Chain 8453");
  });
});
