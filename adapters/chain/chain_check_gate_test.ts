import { describe, expect, test } from "bun:test";
import { type ChainCheck, type ChainCheckGateOptions, ChainNotCheckedError, createChainCheckGate, refusedUnsent } from "./chain_check_gate.ts";
import type { Http1Post } from "./http1_post.ts";

/** A gate on `caip2` whose check answers what `answers` holds next ("unanswered" once empty), counting how often it is asked. */
function countingGate(caip2: string, answers: ChainCheck[], options: Partial<ChainCheckGateOptions>) {
  let asked = 0;
  const gate = createChainCheckGate({
    caip2,
    check: () => {
      asked++;
      return Promise.resolve(answers.shift() ?? { kind: "unanswered" });
    },
    ...options,
  });
  return { gate, asked: () => asked };
}

/** A gate whose check answers what `answers` holds next, with a clock the test moves. */
function gateOf(answers: ChainCheck[], options: Partial<ChainCheckGateOptions> = {}) {
  let now = 0;
  const logs: [string, string, Record<string, unknown>][] = [];
  const { gate, asked } = countingGate("eip155:31339", answers, {
    retryMs: 1_000,
    nowMs: () => now,
    log: (level, event, fields) => logs.push([level, event, fields]),
    ...options,
  });
  let sent = 0;
  const inner = Object.assign(() => {
    sent++;
    return Promise.resolve(new Response("{}"));
  }, { preconnect: () => {} }) as unknown as typeof fetch;
  return { gate, fetch: gate.fetch(inner), asked, sent: () => sent, logs, advance: (ms: number) => void (now += ms) };
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

  test("a node that answers another chain later: closed for good, logged once at error level naming the setting to fix, nothing sent", async () => {
    const g = gateOf([{ kind: "wrong", problem: "CHAINS_FILE: the rpcUrl of eip155:31339 answers chain 31337" }, { kind: "ok" }], {
      fixHint: "fix its rpcUrl in CHAINS_FILE and restart",
    });
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
    // The action is the one its caller gives (app/chain_checks.ts: RPC_URL for a chain served from it alone), not a
    // chains file the deployment may not have.
    const rpcUrl = gateOf([{ kind: "wrong", problem: "RPC_URL answers chain 31337, not eip155:31339" }], { fixHint: "fix RPC_URL and restart" });
    await expect(rpcUrl.fetch("http://node/", {})).rejects.toBeInstanceOf(ChainNotCheckedError);
    expect(rpcUrl.logs[0]?.[2]).toMatchObject({ action: "the chain stays closed; fix RPC_URL and restart" });
    const unnamed = gateOf([{ kind: "wrong", problem: "answers chain 31337" }]);
    await expect(unnamed.fetch("http://node/", {})).rejects.toBeInstanceOf(ChainNotCheckedError);
    expect(unnamed.logs[0]?.[2]).toMatchObject({ action: "the chain stays closed; fix its node's URL and restart" });
  });

  test("an empty answer (no EAS code yet on a backend still syncing): asked again like an unanswered check, warned once, and the gate opens once the node answers", async () => {
    const empty: ChainCheck = { kind: "empty", problem: "No EAS contract answers at 0x42 on eip155:31339" };
    const g = gateOf([empty, empty, { kind: "ok" }]);
    await expect(g.fetch("http://node/", {})).rejects.toBeInstanceOf(ChainNotCheckedError);
    g.advance(1_000);
    const failure = await g.fetch("http://node/", {}).catch((error: unknown) => error);
    expect(String(failure)).toContain("has not answered its chain id yet");
    expect([g.gate.state(), g.asked(), g.sent()]).toEqual(["unchecked", 2, 0]);
    g.advance(1_000);
    expect((await g.fetch("http://node/", {})).status).toBe(200);
    expect(g.gate.state()).toBe("checked");
    expect(g.logs).toEqual([
      ["warn", "chain_check_empty", { chain: "eip155:31339", problem: empty.problem, action: "the chain stays closed; its node is asked again at its next exchange" }],
      ["info", "chain_checked", { chain: "eip155:31339" }],
    ]);
  });

  test("refusedUnsent(): true for the signal of an exchange refused before sending (aborted while waiting for the check, or the check unanswered), false for one sent", async () => {
    let answer!: (found: ChainCheck) => void;
    const gate = createChainCheckGate({ caip2: "eip155:31339", check: () => new Promise<ChainCheck>((resolve) => (answer = resolve)), retryMs: 0 });
    const inner = Object.assign((_input: RequestInfo | URL, init?: RequestInit) =>
      new Promise<Response>((_, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason))), { preconnect: () => {} });
    const fetchFn = gate.fetch(inner as unknown as typeof fetch);
    const waiting = new AbortController();
    const stop = new Error("stopping");
    const held = fetchFn("http://node/", { signal: waiting.signal }).catch((error: unknown) => error);
    waiting.abort(stop);
    // The signal's reason as is, as a fetch aborted before sending gives.
    expect(await held).toBe(stop);
    expect(refusedUnsent(waiting.signal)).toBe(true);
    const unanswered = new AbortController();
    const refused = fetchFn("http://node/", { signal: unanswered.signal });
    answer({ kind: "unanswered" });
    await expect(refused).rejects.toBeInstanceOf(ChainNotCheckedError);
    expect(refusedUnsent(unanswered.signal)).toBe(true);
    const sent = new AbortController();
    const going = fetchFn("http://node/", { signal: sent.signal }).catch((error: unknown) => error);
    answer({ kind: "ok" });
    await Bun.sleep(0);
    sent.abort(stop);
    expect(await going).toBe(stop);
    expect(refusedUnsent(sent.signal)).toBe(false);
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

  describe("a chain checked at start (initial: checked): a failed exchange has the next one check the node first", () => {
    /** An open gate whose node answers what `statuses` holds next (200 once empty; a number, or "throw"). */
    function openGate(statuses: (number | "throw")[], answers: ChainCheck[]) {
      let sent = 0;
      const logs: [string, string][] = [];
      const { gate, asked } = countingGate("eip155:31338", answers, {
        retryMs: 1_000,
        nowMs: () => 0,
        initial: "checked",
        log: (level, event) => logs.push([level, event]),
      });
      const next = () => {
        sent++;
        const status = statuses.shift() ?? 200;
        return status === "throw" ? Promise.reject(new TypeError("fetch failed")) : Promise.resolve(status);
      };
      const fetchFn = gate.fetch(Object.assign(() => next().then((status) => new Response("{}", { status })), { preconnect: () => {} }) as unknown as typeof fetch);
      const post = gate.post(Object.assign(() => next().then((status) => ({ status, text: "{}" })), { idle: () => 0 }) as Http1Post);
      return { gate, fetchFn, post, asked, sent: () => sent, logs };
    }

    test("exchanges that succeed (and a 4xx, a 429 included: the provider's answer) are never checked: nothing but them is sent", async () => {
      const g = openGate([200, 400, 429, 200], []);
      for (let i = 0; i < 5; i++) await g.fetchFn("http://node/", {});
      for (let i = 0; i < 5; i++) await g.post("{}", new AbortController().signal);
      expect([g.gate.state(), g.asked(), g.sent()]).toEqual(["checked", 0, 10]);
      expect(g.logs).toEqual([]);
    });

    test("an exchange its caller aborted (a node that hangs past the deadline) is not counted: no check", async () => {
      const g = openGate(["throw"], []);
      const deadline = new AbortController();
      deadline.abort(new Error("deadline"));
      await expect(g.fetchFn("http://node/", { signal: deadline.signal })).rejects.toThrow();
      expect((await g.fetchFn("http://node/", {})).status).toBe(200);
      expect([g.gate.state(), g.asked(), g.sent()]).toEqual(["checked", 0, 2]);
    });

    test("a 503, then the node answers another chain's id: closed for good, nothing sent after the failure, logged", async () => {
      const g = openGate([503], [{ kind: "wrong", problem: "CHAINS_FILE: the rpcUrl of eip155:31338 answers chain 31337" }]);
      expect((await g.fetchFn("http://node/", {})).status).toBe(503);
      expect(g.gate.state()).toBe("unchecked");
      const failure = await g.fetchFn("http://node/", {}).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(ChainNotCheckedError);
      expect(String(failure)).toContain("serves another chain");
      await expect(g.post("{}", new AbortController().signal)).rejects.toBeInstanceOf(ChainNotCheckedError);
      expect([g.gate.state(), g.asked(), g.sent()]).toEqual(["wrong", 1, 1]);
      expect(g.logs).toEqual([["warn", "chain_recheck"], ["error", "chain_wrong_node"]]);
    });

    test("a fetch that throws or answers 503, or a POST's 502, then the node answers its own id: checked once each, and served again", async () => {
      for (const failing of ["throw", 503] as const) {
        const g = openGate([failing], [{ kind: "ok" }]);
        await g.fetchFn("http://node/", {}).catch(() => undefined);
        expect((await g.fetchFn("http://node/", {})).status).toBe(200);
        await g.fetchFn("http://node/", {});
        expect([g.gate.state(), g.asked(), g.sent()]).toEqual(["checked", 1, 3]);
      }
      // A check unanswered (the provider still down): the next exchange asks again at once, not after retryMs.
      const again = openGate([503], [{ kind: "unanswered" }, { kind: "ok" }]);
      await again.fetchFn("http://node/", {});
      await expect(again.fetchFn("http://node/", {})).rejects.toBeInstanceOf(ChainNotCheckedError);
      expect((await again.fetchFn("http://node/", {})).status).toBe(200);
      expect([again.gate.state(), again.asked(), again.sent()]).toEqual(["checked", 2, 2]);
      const g = openGate([502], [{ kind: "ok" }]);
      expect((await g.post("{}", new AbortController().signal)).status).toBe(502);
      expect((await g.post("{}", new AbortController().signal)).status).toBe(200);
      expect([g.gate.state(), g.asked(), g.sent()]).toEqual(["checked", 1, 2]);
    });

    test("an exchange in flight that succeeds after another failed does not reopen the gate: the next one still checks first", async () => {
      let asked = 0;
      const gate = createChainCheckGate({
        caip2: "eip155:31338",
        check: () => {
          asked++;
          return Promise.resolve<ChainCheck>({ kind: "ok" });
        },
        initial: "checked",
      });
      const answer: ((status: number) => void)[] = [];
      const inner = Object.assign(() => new Promise<Response>((resolve) => answer.push((status) => resolve(new Response("{}", { status })))), { preconnect: () => {} });
      const fetchFn = gate.fetch(inner as unknown as typeof fetch);
      const slow = fetchFn("http://node/", {});
      const failing = fetchFn("http://node/", {});
      answer[1]!(503);
      expect((await failing).status).toBe(503);
      answer[0]!(200);
      expect((await slow).status).toBe(200);
      expect([gate.state(), asked]).toEqual(["unchecked", 0]);
      const next = fetchFn("http://node/", {});
      await Bun.sleep(0);
      expect([asked, answer.length]).toEqual([1, 3]);
      answer[2]!(200);
      expect((await next).status).toBe(200);
      expect(gate.state()).toBe("checked");
    });
  });
});

describe("createChainCheckGate(): empty answers that last", () => {
  test("empty answers for 10 minutes (the gate's clock): logged once at error level, still not final; a check that passes restarts the count", async () => {
    let now = 0;
    const answers: ChainCheck[] = [];
    const logs: [string, string, Record<string, unknown>][] = [];
    const gate = createChainCheckGate({
      caip2: "eip155:31339",
      check: () => Promise.resolve(answers.shift() ?? { kind: "empty", problem: "No EAS contract answers at 0x42 on eip155:31339" }),
      retryMs: 1_000,
      nowMs: () => now,
      log: (level, event, fields) => logs.push([level, event, fields]),
    });
    const status: number[] = [];
    const fetchFn = gate.fetch(Object.assign(() => Promise.resolve(new Response("{}", { status: status.shift() ?? 200 })), { preconnect: () => {} }) as unknown as typeof fetch);
    const refused = async () => expect(await fetchFn("http://node/", {}).catch((error: unknown) => error)).toBeInstanceOf(ChainNotCheckedError);
    const events = () => logs.map(([level, event]) => `${level} ${event}`);

    await refused();
    expect(events()).toEqual(["warn chain_check_empty"]);
    // Asked again (at most once a second) for almost 10 minutes: nothing more logged.
    for (now = 1_000; now < 599_000; now += 59_900) await refused();
    now = 599_000;
    await refused();
    expect(events()).toEqual(["warn chain_check_empty"]);
    now = 600_000;
    await refused();
    expect(gate.state()).toBe("unchecked");
    expect(logs.at(-1)).toEqual(["error", "chain_check_empty", {
      chain: "eip155:31339",
      problem: "No EAS contract answers at 0x42 on eip155:31339",
      minutes: 10,
      action: "the chain stays closed and its node is asked again; check the EAS address the trust anchors give this chain, and that its node serves this network (not another one reusing its chain id)",
    }]);
    // Once only, and still asked again: an unanswered check between the empty ones changes nothing; the node answers.
    answers.push({ kind: "empty", problem: "No EAS contract answers at 0x42 on eip155:31339" }, { kind: "unanswered" }, { kind: "ok" });
    for (let i = 0; i < 2; i++) {
      now += 60_000;
      await refused();
    }
    now += 1_000;
    expect((await fetchFn("http://node/", {})).status).toBe(200);
    expect(events()).toEqual(["warn chain_check_empty", "error chain_check_empty", "info chain_checked"]);

    // Closed again by a 503: empty answers are counted from the first one of this run.
    logs.length = 0;
    status.push(503);
    expect((await fetchFn("http://node/", {})).status).toBe(503);
    await refused();
    now += 599_999;
    await refused();
    expect(events()).toEqual(["warn chain_recheck", "warn chain_check_empty"]);
    now += 1;
    await refused();
    expect(events()).toEqual(["warn chain_recheck", "warn chain_check_empty", "error chain_check_empty"]);
  });
});
