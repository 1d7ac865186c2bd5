import { describe, expect, test } from "bun:test";
import { type ChainCheck, ChainNotCheckedError, createChainCheckGate } from "./chain_check_gate.ts";
import type { Http1Post } from "./http1_post.ts";

/** A gate whose check answers what `answers` holds next, with a clock the test moves. */
function gateOf(answers: ChainCheck[]) {
  let now = 0;
  let asked = 0;
  const logs: [string, string, Record<string, unknown>][] = [];
  const gate = createChainCheckGate({
    caip2: "eip155:31339",
    check: () => {
      asked++;
      return Promise.resolve(answers.shift() ?? { kind: "unanswered" });
    },
    retryMs: 1_000,
    nowMs: () => now,
    log: (level, event, fields) => logs.push([level, event, fields]),
  });
  let sent = 0;
  const inner = Object.assign(() => {
    sent++;
    return Promise.resolve(new Response("{}"));
  }, { preconnect: () => {} }) as unknown as typeof fetch;
  return { gate, fetch: gate.fetch(inner), asked: () => asked, sent: () => sent, logs, advance: (ms: number) => void (now += ms) };
}

describe("createChainCheckGate()", () => {
  test("a node that does not answer: each exchange fails unsent, the node asked again at most once per retryMs; once it answers its id the gate opens for good", async () => {
    const g = gateOf([{ kind: "unanswered" }, { kind: "ok" }]);
    expect(g.gate.state()).toBe("unchecked");
    await expect(g.fetch("http://node/", {})).rejects.toBeInstanceOf(ChainNotCheckedError);
    // Within retryMs: failed at once, the node not asked again.
    await expect(g.fetch("http://node/", {})).rejects.toBeInstanceOf(ChainNotCheckedError);
    expect([g.asked(), g.sent()]).toEqual([1, 0]);
    g.advance(1_000);
    expect((await g.fetch("http://node/", {})).status).toBe(200);
    expect([g.gate.state(), g.asked(), g.sent()]).toEqual(["checked", 2, 1]);
    // Open for good: no further check.
    await g.fetch("http://node/", {});
    expect([g.asked(), g.sent()]).toEqual([2, 2]);
    expect(g.logs.map(([level, event]) => [level, event])).toEqual([["info", "chain_checked"]]);
  });

  test("a node that answers another chain later: closed for good, logged once at error level, nothing sent", async () => {
    const g = gateOf([{ kind: "wrong", problem: "CHAINS_FILE: the rpcUrl of eip155:31339 answers chain 31337" }, { kind: "ok" }]);
    const failure = await g.fetch("http://node/", {}).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ChainNotCheckedError);
    expect(String(failure)).toContain("serves another chain");
    g.advance(60_000);
    await expect(g.fetch("http://node/", {})).rejects.toBeInstanceOf(ChainNotCheckedError);
    expect([g.gate.state(), g.asked(), g.sent()]).toEqual(["wrong", 1, 0]);
    expect(g.logs).toEqual([["error", "chain_wrong_node", {
      chain: "eip155:31339",
      problem: "CHAINS_FILE: the rpcUrl of eip155:31339 answers chain 31337",
      action: "the chain stays closed; fix its rpcUrl in CHAINS_FILE and restart",
    }]]);
  });

  test("exchanges waiting together share one check; a check that throws counts as unanswered", async () => {
    let release!: (found: ChainCheck) => void;
    let asked = 0;
    const gate = createChainCheckGate({
      caip2: "eip155:31338",
      check: () => {
        asked++;
        return asked === 1 ? Promise.reject(new Error("boom")) : new Promise((resolve) => (release = resolve));
      },
      retryMs: 0,
    });
    await expect(gate.ready()).rejects.toBeInstanceOf(ChainNotCheckedError);
    const waiting = [gate.ready(), gate.ready(), gate.ready()];
    release({ kind: "ok" });
    await Promise.all(waiting);
    expect([asked, gate.state()]).toEqual([2, "checked"]);
  });

  test("the kept-alive POST waits behind the gate as fetch does", async () => {
    let sent = 0;
    const inner = Object.assign((_body: string, _signal: AbortSignal) => {
      sent++;
      return Promise.resolve({ status: 200, text: "{}" });
    }, { idle: () => 3 }) as Http1Post;
    const answers: ChainCheck[] = [{ kind: "unanswered" }, { kind: "ok" }];
    const gate = createChainCheckGate({ caip2: "eip155:31338", check: () => Promise.resolve(answers.shift()!), retryMs: 0 });
    const post = gate.post(inner);
    expect(post.idle()).toBe(3);
    await expect(post("{}", new AbortController().signal)).rejects.toBeInstanceOf(ChainNotCheckedError);
    expect(sent).toBe(0);
    expect((await post("{}", new AbortController().signal)).status).toBe(200);
    expect(sent).toBe(1);
  });

  test("an exchange waiting for a check in flight rejects with its own signal's reason as soon as it aborts (fetch, POST, ready); the check goes on for the others", async () => {
    // A check that never answers by itself (the real one ends at its own 10 s timeout): before, every waiting exchange
    // waited for it, however short its caller's deadline.
    let asked = 0;
    let answer!: (found: ChainCheck) => void;
    const gate = createChainCheckGate({
      caip2: "eip155:31339",
      check: () => {
        asked++;
        return new Promise<ChainCheck>((resolve) => (answer = resolve));
      },
      retryMs: 0,
    });
    let sent = 0;
    const innerFetch = Object.assign(() => {
      sent++;
      return Promise.resolve(new Response("{}"));
    }, { preconnect: () => {} }) as unknown as typeof fetch;
    const innerPost = Object.assign(() => {
      sent++;
      return Promise.resolve({ status: 200, text: "{}" });
    }, { idle: () => 0 }) as Http1Post;
    const viaFetch = new AbortController();
    const viaRequest = new AbortController();
    const viaPost = new AbortController();
    const viaReady = new AbortController();
    const patient = gate.fetch(innerFetch)("http://node/", {});
    const waiting = [
      gate.fetch(innerFetch)("http://node/", { signal: viaFetch.signal }),
      gate.fetch(innerFetch)(new Request("http://node/", { method: "POST", body: "{}", signal: viaRequest.signal })),
      gate.post(innerPost)("{}", viaPost.signal),
      gate.ready(viaReady.signal),
    ].map((exchange) => exchange.then(() => "answered", (error: unknown) => error));
    const reasons = [new Error("fetch deadline"), new Error("request deadline"), new Error("post deadline"), new Error("ready deadline")];
    viaFetch.abort(reasons[0]);
    viaRequest.abort(reasons[1]);
    viaPost.abort(reasons[2]);
    viaReady.abort(reasons[3]);
    // Each rejected with its own reason while the check is still in flight (it is answered only below).
    expect(await Promise.all(waiting)).toEqual(reasons);
    expect([asked, sent, gate.state()]).toEqual([1, 0, "unchecked"]);
    // A signal already aborted: rejected at once, and on a gate with no check in flight, none is asked.
    const gone = new AbortController();
    gone.abort(new Error("already gone"));
    await expect(gate.ready(gone.signal)).rejects.toThrow("already gone");
    let askedFresh = 0;
    const fresh = createChainCheckGate({ caip2: "eip155:31340", check: () => (askedFresh++, Promise.resolve({ kind: "ok" } as const)), retryMs: 0 });
    await expect(fresh.post(innerPost)("{}", gone.signal)).rejects.toThrow("already gone");
    expect([askedFresh, sent, fresh.state()]).toEqual([0, 0, "unchecked"]);
    // The check went on: once it answers, the exchange still waiting is sent.
    answer({ kind: "ok" });
    expect((await patient).status).toBe(200);
    expect([asked, sent, gate.state()]).toEqual([1, 1, "checked"]);
  }, 10_000);
});
