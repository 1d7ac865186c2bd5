import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { anvilBinary, extractEmbeddedFile, resolveAnvilBinary } from "./_anvil.ts";
import type { EmbeddedFile } from "./_embedded_anvil.ts";

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ats-embedded-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A stand-in for a file inside a compiled executable: a file on disk with its size and hash. */
function embedded(content: string): EmbeddedFile {
  const path = join(tempDir(), "payload");
  writeFileSync(path, content);
  return { path, size: Buffer.byteLength(content), sha256: new Bun.CryptoHasher("sha256").update(content).digest("hex") };
}

describe("extractEmbeddedFile()", () => {
  test("copies the file under its hash with mode 0755", async () => {
    const file = embedded("#!/bin/sh\necho anvil\n");
    const dir = join(tempDir(), "bin");
    const path = await extractEmbeddedFile(file, dir, "anvil");
    expect(path).toBe(join(dir, `anvil-${file.sha256.slice(0, 16)}`));
    expect(readFileSync(path, "utf8")).toBe("#!/bin/sh\necho anvil\n");
    expect(statSync(path).mode & 0o777).toBe(0o755);
    expect(Bun.spawnSync([path]).stdout.toString()).toBe("anvil\n");
  });

  test("reuses an intact copy on the next start", async () => {
    const file = embedded("first start");
    const dir = tempDir();
    const first = await extractEmbeddedFile(file, dir, "anvil");
    const inode = statSync(first).ino;
    const second = await extractEmbeddedFile(file, dir, "anvil");
    expect(second).toBe(first);
    expect(statSync(second).ino).toBe(inode);
  });

  test("replaces a damaged copy of the same size and removes older versions", async () => {
    const file = embedded("the real binary");
    const dir = tempDir();
    const target = join(dir, `anvil-${file.sha256.slice(0, 16)}`);
    writeFileSync(target, "the fake binary");
    writeFileSync(join(dir, "anvil-0123456789abcdef"), "an older release");
    const path = await extractEmbeddedFile(file, dir, "anvil");
    expect(path).toBe(target);
    expect(readFileSync(path, "utf8")).toBe("the real binary");
    expect(readdirSync(dir)).toEqual([`anvil-${file.sha256.slice(0, 16)}`]);
  });

  test("refuses a file that does not match its recorded hash and leaves nothing behind", async () => {
    const file = { ...embedded("tampered"), sha256: "00".repeat(32) };
    const dir = tempDir();
    await expect(extractEmbeddedFile(file, dir, "anvil")).rejects.toThrow("does not match its embedded hash");
    expect(readdirSync(dir)).toEqual([]);
  });
});

test("resolveAnvilBinary() from source runs the npm package's anvil and extracts nothing", async () => {
  const dir = join(tempDir(), "bin");
  expect(await resolveAnvilBinary(dir)).toBe(anvilBinary());
  expect(existsSync(dir)).toBe(false);
});
