import { describe, expect, spyOn, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { parseWitnessBody } from "../../domain/witness/mod.ts";
import { parseDelegatedRequest } from "../../domain/delegation/mod.ts";
import { createSessions } from "../../domain/sessions/mod.ts";
import { fakeAccountStore, fakeClock, fakeRandom } from "../../ports/fakes/mod.ts";
import { REQUEST_MODELS } from "../models.ts";
import {
  BODY_TOO_LARGE,
  compileRequestCheck,
  jsonShapeRefusal,
  MAX_BODY_BYTES,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  parseJsonBody,
  queryOf,
  readBodyText,
} from "./request.ts";

const LOWER = "0x173a347faed486bb69081ef673c6e52c03f57f3e";
const CHECKSUMMED = "0x173a347FAED486BB69081EF673c6E52c03f57F3e";
const BAD_CHECKSUM = "0x173A347faed486bb69081ef673c6e52c03f57f3e";
const B32 = `0x${"ab".repeat(32)}`;

/** A deterministic generator, so a failure can be replayed. */
function random(seed: number) {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]! };
}

/** Values of every JSON type, and of every shape the fields of these bodies are checked for. */
const POOL: readonly unknown[] = [
  undefined, null, "", "x", 0, -0, 1, -1, 1.5, 2 ** 53, 2 ** 60, true, false, [], {}, [1], { a: 1 },
  "0", "00", "1", "01", "-1", "1.5", "18446744073709551615", "18446744073709551616", "99999999999999999999",
  `${"0".repeat(70)}1`, "1".repeat(79), "0".repeat(78), "0".repeat(79),
  LOWER, CHECKSUMMED, BAD_CHECKSUM, "0x12", `0x${"g".repeat(40)}`,
  B32, B32.toUpperCase().replace("0X", "0x"), `0x${"ab".repeat(31)}`, "0x", "0x1", "0xab", "0xABcd",
];

const FIELDS = ["schema", "schemaUid", "deadline", "recipient", "expirationTime", "revocable", "refUID", "data", "value", "nonce"];

function validDelegatedBody() {
  const message: Record<string, unknown> = {
    attester: LOWER, schema: B32, recipient: LOWER, expirationTime: "0", revocable: true,
    refUID: `0x${"0".repeat(64)}`, data: "0x1234", value: "0", nonce: "0", deadline: "1800000000",
  };
  return {
    attester: LOWER,
    signature: `0x${"11".repeat(65)}`,
    prepared: {
      delegatedRequest: { ...message, easContractAddress: LOWER, chainId: 31337 } as Record<string, unknown>,
      typedData: { domain: {}, types: {}, primaryType: "Attest", message } as Record<string, unknown>,
    } as Record<string, unknown>,
  } as Record<string, unknown>;
}

/** Sets (or, for undefined, deletes) one property. */
function put(target: Record<string, unknown>, key: string, value: unknown) {
  if (value === undefined) delete target[key];
  else target[key] = value;
}

describe("the delegated-attest model and the domain parser", () => {
  const model = REQUEST_MODELS.delegatedAttest.body;
  // What a JSON Schema pattern cannot say: an address checksum, a uint64 of 20 digits above 2^64 - 1.
  const SEMANTIC = new Set([
    "attester must be a 20-byte 0x-prefixed address",
    "recipient must be an address",
    "expirationTime must be a uint64 in base 10",
    "prepared.delegatedRequest.deadline must be a uint64 in base 10",
  ]);

  test("the legacy forms the parser accepts pass the model: delegatedRequest alone, schemaUid, the message alone", () => {
    const requestOnly = { attester: LOWER, signature: "0xdead", prepared: { delegatedRequest: { schema: B32, deadline: "1800000000" } } };
    const alias = { attester: LOWER, signature: "0xdead", prepared: { delegatedRequest: { schemaUid: B32, deadline: 1_800_000_000 } } };
    const messageOnly = {
      attester: LOWER,
      signature: "0xdead",
      prepared: { delegatedRequest: { recipient: "ignored" }, typedData: { message: { schema: B32, deadline: "1", recipient: LOWER } } },
    };
    for (const body of [requestOnly, alias, messageOnly, validDelegatedBody()]) {
      expect(parseDelegatedRequest(body).ok).toBe(true);
      expect(Value.Check(model, body)).toBe(true);
    }
  });

  test("over thousands of generated bodies, every body the parser accepts passes, and the model refuses only what the parser refuses", () => {
    const rng = random(11);
    let accepted = 0;
    let refused = 0;
    for (let i = 0; i < 6_000; i++) {
      const body = validDelegatedBody();
      const prepared = body.prepared as Record<string, unknown>;
      const request = prepared.delegatedRequest as Record<string, unknown>;
      const typedData = prepared.typedData as Record<string, unknown>;
      const message = { ...(typedData.message as Record<string, unknown>) };
      typedData.message = message;
      if (rng.next() < 0.3) for (const field of FIELDS) delete request[field];
      if (rng.next() < 0.3) for (const field of FIELDS) delete message[field];
      const mutations = 1 + Math.floor(rng.next() * 4);
      for (let m = 0; m < mutations; m++) {
        const where = rng.next();
        const value = rng.pick(POOL);
        if (where < 0.06) put(body, "attester", value);
        else if (where < 0.12) put(body, "signature", value);
        else if (where < 0.14) put(body, "prepared", value);
        else if (where < 0.17) put(prepared, "typedData", value);
        else if (where < 0.2) put(typedData, "message", value);
        else if (where < 0.22) put(prepared, "delegatedRequest", value);
        else if (where < 0.6) put(request, rng.pick(FIELDS), value);
        else put(message, rng.pick(FIELDS), value);
      }
      const parsed = parseDelegatedRequest(body);
      const passes = Value.Check(model, body);
      if (parsed.ok) {
        expect({ body, passes }).toEqual({ body, passes: true });
        accepted++;
      } else if (passes) {
        expect({ body, message: parsed.message, semantic: SEMANTIC.has(parsed.message) }).toEqual({ body, message: parsed.message, semantic: true });
      } else {
        refused++;
      }
    }
    expect(accepted).toBeGreaterThan(500);
    expect(refused).toBeGreaterThan(500);
  });
});

describe("the controller-witness model and the domain's body reader", () => {
  test("agree on every generated body, current and legacy", () => {
    const model = REQUEST_MODELS.controllerWitness.body;
    const rng = random(5);
    const names = ["subjectDid", "controllerDid", "chainId", "subject", "controller", "attestationUid", "easContract", "schemaUid", "method"];
    const values = [...POOL, "did:web:example.com", "x".repeat(2_048), "x".repeat(2_049), 2 ** 53 - 1, 31337];
    let accepted = 0;
    for (let i = 0; i < 4_000; i++) {
      const body: Record<string, unknown> = rng.next() < 0.5
        ? { subjectDid: "did:web:example.com", controllerDid: `did:pkh:eip155:1:${LOWER}` }
        : { subject: "did:web:example.com", controller: `did:pkh:eip155:1:${LOWER}`, method: "dns" };
      const mutations = Math.floor(rng.next() * 3);
      for (let m = 0; m < mutations; m++) put(body, rng.pick(names), rng.pick(values));
      const input = rng.next() < 0.02 ? rng.pick(POOL) : body;
      const parsed = parseWitnessBody(input);
      expect({ input, passes: Value.Check(model, input) }).toEqual({ input, passes: parsed.ok });
      if (parsed.ok) accepted++;
    }
    expect(accepted).toBeGreaterThan(1_000);
  });
});

describe("the sign-in models and the sign-in use cases", () => {
  const sessions = createSessions({
    accounts: fakeAccountStore(),
    clock: fakeClock(),
    random: fakeRandom(),
    policy: { sessionTtlHours: 1, challengeTtlMinutes: 10, siweDomains: [] },
  });

  test("challenge: whatever the use case answers with a challenge passes; what the model refuses the use case refuses with a 400", async () => {
    const model = REQUEST_MODELS.walletChallenge.body;
    const rng = random(3);
    const names = ["walletDid", "address", "chainId", "domain", "uri"];
    const values = [...POOL, `did:pkh:eip155:1:${LOWER}`, "did:web:x", "app.example.com", "app.example.com:8443", "a b", "https://app.example.com/", " https://x/", "https://x/a b", "ftp://x/"];
    let accepted = 0;
    for (let i = 0; i < 3_000; i++) {
      const body: Record<string, unknown> = rng.next() < 0.5
        ? { walletDid: `did:pkh:eip155:1:${LOWER}`, domain: "app.example.com", uri: "https://app.example.com/" }
        : { address: CHECKSUMMED, chainId: 1, domain: "app.example.com", uri: "https://app.example.com/" };
      const mutations = Math.floor(rng.next() * 3);
      for (let m = 0; m < mutations; m++) put(body, rng.pick(names), rng.pick(values));
      const passes = Value.Check(model, body);
      // The use case never throws, even on a URI with whitespace that URL parsing accepts.
      const result = await sessions.challenge(body);
      if (result.ok) {
        expect({ body, passes }).toEqual({ body, passes: true });
        accepted++;
      } else if (!passes) {
        // Sign-in's order is not fixed by the decisions: a malformed body with a bad DID may meet either 400 first.
        expect({ body, code: result.code }).toEqual({ body, code: result.code === "INVALID_DID" ? "INVALID_DID" : "INVALID_INPUT" });
      }
    }
    expect(accepted).toBeGreaterThan(500);
  });

  test("verify: what the model refuses the use case refuses with a 400 before looking anything up", async () => {
    const model = REQUEST_MODELS.walletVerify.body;
    for (const body of [{}, { challengeId: "c", siweMessage: "m" }, { challengeId: "", siweMessage: "m", signature: "s" }, { challengeId: 1, siweMessage: "m", signature: "s" }, { challengeId: "c", siweMessage: "m", signature: "x".repeat(16_387) }, { challengeId: "c", siweMessage: "m".repeat(2_049), signature: "s" }]) {
      expect(Value.Check(model, body)).toBe(false);
      expect(await sessions.verify(body)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    }
    expect(Value.Check(model, { challengeId: "c", siweMessage: "m", signature: "s" })).toBe(true);
  });
});

describe("request checks", () => {
  test("a refusal names the failing field; a union failing on different fields gives its description", () => {
    const witness = compileRequestCheck(REQUEST_MODELS.controllerWitness.body);
    expect(witness.explain({ subjectDid: "did:web:a.com" })).toBe("controllerDid (or controller) is required");
    expect(witness.explain({ subjectDid: "did:web:a.com", controllerDid: "x", chainId: "1" })).toStartWith("chainId is invalid");
    expect(witness.explain([])).toBe("Body must be a JSON object");
    const challenge = compileRequestCheck(REQUEST_MODELS.walletChallenge.body);
    expect(challenge.explain({ walletDid: "did:pkh:eip155:1:0x1", uri: "https://a/" })).toBe("domain is required");
    expect(challenge.explain({ address: LOWER, domain: "a.com", uri: "https://a/" })).toBe("walletDid (or address with chainId) is required");
    // The alternative the body chose (it gives walletDid) names its own field.
    expect(challenge.explain({ walletDid: "", domain: "a.com", uri: "https://a/" })).toStartWith("walletDid is invalid");
    expect(challenge.explain({ walletDid: "did:pkh:eip155:1:0x1", domain: "a b", uri: "https://a/" })).toStartWith("domain is invalid");
    // A subject with a malformed txHash: txHash is named, not the union's sentence about did (decisions §2).
    const subject = compileRequestCheck(REQUEST_MODELS.subjectCreate.body);
    expect(subject.explain({ did: "did:pkh:eip155:31337:0x000000000000000000000000000000000000dEaD", txHash: "0x12" })).toStartWith("txHash is invalid");
    expect(subject.explain({ displayName: "x" })).toBe("did (or its alias subjectDid) is required; displayName and txHash are optional");
  });

  test("a query names given once are strings, repeated names arrays; no name reaches the prototype", () => {
    const query = queryOf("http://localhost/v1/nonce?attester=a&x=1&x=2&__proto__=p&empty=#frag");
    expect({ ...query }).toEqual({ attester: "a", x: ["1", "2"], ["__proto__"]: "p", empty: "" });
    expect(Object.getPrototypeOf(query)).toBe(null);
    expect({ ...queryOf("http://localhost/v1/nonce") }).toEqual({});
  });

  test("a query check names a parameter given twice; a body check (no `query`) keeps naming the type", () => {
    const list = compileRequestCheck(REQUEST_MODELS.signingKeyList.query, { query: true });
    expect(list.explain(queryOf("http://localhost/x?keyType=jwk&keyType=jwk"))).toBe("keyType must be given once");
    const asBody = compileRequestCheck(REQUEST_MODELS.signingKeyList.query);
    expect(asBody.explain({ keyType: ["jwk", "jwk"] })).toStartWith("keyType is invalid");
  });

  test("a body is read up to the limit; a longer one, with or without Content-Length, is BODY_TOO_LARGE", async () => {
    const post = (body: BodyInit) => new Request("http://localhost/x", { method: "POST", body, duplex: "half" } as RequestInit);
    const chunked = (bytes: number) => {
      let left = bytes;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (left <= 0) return controller.close();
          const n = Math.min(left, 1 << 20);
          left -= n;
          controller.enqueue(new Uint8Array(n).fill(0x61));
        },
      });
    };
    expect(await readBodyText({ request: post("héllo") })).toBe("héllo");
    expect(await readBodyText({ request: new Request("http://localhost/x", { method: "POST" }) })).toBe("");
    const atLimit = await readBodyText({ request: post(chunked(MAX_BODY_BYTES)) });
    expect(typeof atLimit === "string" && atLimit.length).toBe(MAX_BODY_BYTES);
    expect(await readBodyText({ request: post(chunked(MAX_BODY_BYTES + 1)) })).toBe(BODY_TOO_LARGE);
    expect(await readBodyText({ request: post("a".repeat(MAX_BODY_BYTES + 1)) })).toBe(BODY_TOO_LARGE);
    expect(parseJsonBody(BODY_TOO_LARGE)).toMatchObject({ ok: false, code: "PAYLOAD_TOO_LARGE" });
    expect(parseJsonBody("{x")).toMatchObject({ ok: false, code: "INVALID_JSON" });
  });
});

describe("hostile JSON (issue 33)", () => {
  /** The nesting and the values (the count the scan keeps: one per `[`, `{` and `,`, plus one) of a parsed value. */
  const shape = (value: unknown): { depth: number; marks: number } => {
    if (typeof value !== "object" || value === null) return { depth: 0, marks: 0 };
    const children = Array.isArray(value) ? value : Object.values(value);
    let depth = 0;
    let marks = 1 + Math.max(children.length - 1, 0);
    for (const child of children) {
      const inner = shape(child);
      depth = Math.max(depth, inner.depth);
      marks += inner.marks;
    }
    return { depth: depth + 1, marks };
  };
  /** Strings that look like structure, escapes before quotes included. */
  const STRINGS = ["[", "]", "{", "}", ",", '"', '\\', '\\"', '\\\\"[', "a\\", '["x",{"y":[1,2]}]', "\u0022[", ""];

  test("the scan refuses exactly the bodies nested past MAX_JSON_DEPTH or holding more than MAX_JSON_VALUES values", () => {
    const rnd = random(33);
    // A spine `depth` deep, with a few shallow siblings and scalars (strings that look like structure) on the way.
    const build = (depth: number): unknown => {
      if (depth === 0) return rnd.pick([...STRINGS, 0, 1.5, null, true]);
      const items = [build(depth - 1)];
      while (rnd.next() < 0.5) items.splice(Math.floor(rnd.next() * (items.length + 1)), 0, rnd.pick([...STRINGS, 0, [], {}, [STRINGS[0]]]));
      if (rnd.next() < 0.5) return items;
      return Object.fromEntries(items.map((item, i) => [rnd.pick(STRINGS) + i, item]));
    };
    let refused = 0;
    let accepted = 0;
    for (let i = 0; i < 400; i++) {
      const value = build(Math.floor(rnd.next() * 40));
      // Indented by 10 too: runs of whitespace past 64 characters, which the scan skips with one search.
      const text = JSON.stringify(value, null, rnd.pick([0, 1, "\t", 10]));
      const { depth, marks } = shape(value);
      const fits = depth <= MAX_JSON_DEPTH && marks + 1 <= MAX_JSON_VALUES;
      expect(jsonShapeRefusal(text) === undefined).toBe(fits);
      if (fits) accepted++;
      else refused++;
    }
    // Both sides were reached.
    expect(Math.min(accepted, refused)).toBeGreaterThan(20);
    // At the bounds: 32 levels pass and 33 do not; an array of 19,999 numbers (20,000 values with itself) passes.
    expect(jsonShapeRefusal(`${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`)).toBeUndefined();
    expect(jsonShapeRefusal(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`)).toBe(`Body nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect(jsonShapeRefusal(JSON.stringify(Array(MAX_JSON_VALUES - 1).fill(0)))).toBeUndefined();
    expect(jsonShapeRefusal(JSON.stringify(Array(MAX_JSON_VALUES).fill(0)))).toBe(`Body holds more than ${MAX_JSON_VALUES} values`);
    // Structure inside strings never counts, however long: 6 MB of brackets, commas and escaped quotes in one string.
    expect(jsonShapeRefusal(JSON.stringify({ identifiers: ['[,{"\\'.repeat(1_000_000)] }))).toBeUndefined();
    // Long runs of anything else are skipped whole, structure after them still counted.
    expect(jsonShapeRefusal(`[${" ".repeat(8_000_000)}1${"2".repeat(100)} , [${" ".repeat(100)}[]]]`)).toBeUndefined();
    expect(jsonShapeRefusal(`${" ".repeat(1_000)}${"[".repeat(MAX_JSON_DEPTH + 1)}`)).toBe(`Body nested deeper than ${MAX_JSON_DEPTH} levels`);
    // More strings than two per value allowed: more values than allowed (or no JSON).
    expect(jsonShapeRefusal('"" '.repeat(2 * MAX_JSON_VALUES))).toBeUndefined();
    expect(jsonShapeRefusal('"" '.repeat(2 * MAX_JSON_VALUES + 1))).toBe(`Body holds more than ${MAX_JSON_VALUES} values`);
    // More closed than opened is no JSON: the scan stops there and JSON.parse refuses it, having built nothing past it.
    expect(jsonShapeRefusal(`[]]${"[".repeat(100)}`)).toBeUndefined();
    expect(parseJsonBody(`[]]${"[".repeat(100)}`)).toMatchObject({ ok: false, code: "INVALID_JSON" });
  });

  test("the 8 MB bodies of the attack are refused INVALID_INPUT by every route's parser, and never parsed", () => {
    const parse = spyOn(JSON, "parse");
    try {
      const nested = `${"[".repeat(4_000_000)}${"]".repeat(4_000_000)}`;
      const wide = `[${"0,".repeat(4_000_000)}0]`;
      const members = `{${'"a":{},'.repeat(1_000_000)}"b":1}`;
      const check = compileRequestCheck(REQUEST_MODELS.identityResolve.body);
      for (const body of [nested, wide, members]) {
        expect(parseJsonBody(body)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
        expect(check.readJson(body)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
      }
      expect(parseJsonBody(nested)).toEqual({ ok: false, code: "INVALID_INPUT", message: `Body nested deeper than ${MAX_JSON_DEPTH} levels` });
      expect(parseJsonBody(wide)).toEqual({ ok: false, code: "INVALID_INPUT", message: `Body holds more than ${MAX_JSON_VALUES} values` });
      expect(parse).toHaveBeenCalledTimes(0);
      // A body within the bounds is parsed as before.
      expect(check.readJson(JSON.stringify({ identifiers: ["did:web:a.test"] }))).toMatchObject({ ok: true });
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });
});
