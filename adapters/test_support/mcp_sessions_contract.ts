import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { T0, fresh } from "./_helpers.ts";

/** The storage contract's tests of MCP session records; registered inside its describe, `open` gives the storage under test. */
export function mcpSessionsContract(open: () => Promise<Storage>) {
  test("mcp sessions: used ones stay, idle ones go (on use, sweep and open); past the bound the least recently used go; closed ones are gone", async () => {
    const { mcpSessions } = await open();
    const late = T0 + 20 * 86_400_000;
    const idleMs = 60_000;
    // Earlier tests' sessions are idle by now.
    await mcpSessions.sweep({ nowMs: late, idleMs });
    const [a, b, c, d] = [fresh("a"), fresh("b"), fresh("c"), fresh("d")];
    const bounds = { maxSessions: 3, idleMs };
    expect(await mcpSessions.open(a, { ...bounds, nowMs: late })).toEqual({ idle: 0, full: 0 });
    await mcpSessions.open(b, { ...bounds, nowMs: late });
    await mcpSessions.open(c, { ...bounds, nowMs: late });
    // Used in the same millisecond as it was opened: still the most recent use.
    expect(await mcpSessions.touch(a, { nowMs: late, idleMs })).toBe(true);
    expect(await mcpSessions.open(d, { ...bounds, nowMs: late })).toEqual({ idle: 0, full: 1 });
    expect(await mcpSessions.touch(b, { nowMs: late, idleMs })).toBe(false);
    expect(await mcpSessions.count({ nowMs: late, idleMs })).toBe(3);
    expect(await mcpSessions.close(c)).toBe(true);
    expect(await mcpSessions.close(c)).toBe(false);
    expect(await mcpSessions.touch(c, { nowMs: late, idleMs })).toBe(false);
    // Idle: unused for idleMs.
    expect(await mcpSessions.touch(a, { nowMs: late + 59_999, idleMs })).toBe(true);
    expect(await mcpSessions.touch(d, { nowMs: late + 60_000, idleMs })).toBe(false);
    expect(await mcpSessions.count({ nowMs: late + 60_000, idleMs })).toBe(1);
    expect(await mcpSessions.sweep({ nowMs: late + 60_000, idleMs })).toBe(1);
    expect(await mcpSessions.open(fresh("e"), { ...bounds, nowMs: late + 119_999 })).toEqual({ idle: 1, full: 0 });
    expect(await mcpSessions.count({ nowMs: late + 119_999, idleMs })).toBe(1);
  });
}
