import { expect, test } from "bun:test";
import { compileTestUsd } from "../../scripts/build_test_token.ts";
import artifact from "./test_usd.json" with { type: "json" };

test("test_usd.json is TestUsd.sol compiled with the project's forge set-up (run bun scripts/build_test_token.ts after a change)", () => {
  const compiled = compileTestUsd();
  expect(artifact.bytecode).toBe(compiled.bytecode);
  expect(artifact.abi).toEqual(compiled.abi as typeof artifact.abi);
}, 120_000);
