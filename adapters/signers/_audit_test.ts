import { expect, test } from "bun:test";
import { createAudit } from "./_audit.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const context = { purpose: "transaction" } as const;

test("after a remote signer's timeout, the signatures queued behind it fail at once for one more deadline; then it is asked again", async () => {
  let clock = 1_000;
  let asked = 0;
  let answers = false;
  const audit = createAudit({ role: "delegate", backend: "jsonrpc", key: "0xabc" }, { log: quiet, timeoutMs: 20, nowMs: () => clock });
  const sign = () => {
    asked++;
    return answers ? Promise.resolve({ ok: true as const, digest: "0x01" }) : new Promise<never>(() => {});
  };
  expect(await audit.run(context, sign)).toEqual({ ok: false, reason: "timeout" });
  // Seven more, as seven writes waiting for the wallet would come: none asks the signer, none waits out a deadline.
  for (let i = 0; i < 7; i++) expect(await audit.run(context, sign)).toEqual({ ok: false, reason: "timeout" });
  expect(asked).toBe(1);
  expect(audit.state()).toBe("down");
  clock += 20;
  answers = true;
  expect(await audit.run(context, sign)).toEqual({ ok: true } as never);
  expect([asked, audit.state()]).toEqual([2, "up"]);
});

test("a key in the process is never paused: every signature asks it", async () => {
  let asked = 0;
  const audit = createAudit({ role: "delegate", backend: "env", key: "0xabc" }, { log: quiet, timeoutMs: 20, nowMs: () => 0 });
  const failing = () => (asked++, Promise.reject(new Error("boom")));
  await audit.run(context, failing);
  await audit.run(context, failing);
  expect(asked).toBe(2);
});
