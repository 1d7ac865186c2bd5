import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const labels = resolve(import.meta.dir, "_image_labels.sh");
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A new git repository (no commit yet) whose `origin` is `remote`. */
function repository(remote?: string): string {
  const dir = mkdtempSync(join(tmpdir(), "ats-image-labels-"));
  dirs.push(dir);
  Bun.spawnSync(["git", "init", "-q", dir]);
  if (remote !== undefined) Bun.spawnSync(["git", "-C", dir, "remote", "add", "origin", remote]);
  return dir;
}

/** `image_revision` and `image_source` as scripts/image.sh sources them, run in `dir`. */
function run(dir: string, env: Record<string, string> = {}): { revision: string; source: string } {
  const out = Bun.spawnSync(["bash", "-c", `set -euo pipefail; . ${JSON.stringify(labels)}; image_revision; image_source`], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, ...env },
  });
  expect(out.exitCode).toBe(0);
  const [revision, source] = out.stdout.toString().trimEnd().split("\n");
  return { revision: revision!, source: source! };
}

test("a remote carrying a CI job token gives a source label without it (the token was in the image's labels and history)", () => {
  const dir = repository("https://gitlab-ci-token:glpat-EXAMPLESECRET123@gitlab.example.com/acme/ats.git");
  expect(run(dir).source).toBe("https://gitlab.example.com/acme/ats.git");
  expect(run(dir, { ATS_IMAGE_SOURCE: "https://user@example.com:8443/ats" }).source).toBe("https://example.com:8443/ats");
});

test("remotes without userinfo, and scp-like ones, are kept as they are; no remote is unknown", () => {
  expect(run(repository("https://github.com/acme/ats.git")).source).toBe("https://github.com/acme/ats.git");
  expect(run(repository("git@github.com:acme/ats.git")).source).toBe("git@github.com:acme/ats.git");
  expect(run(repository()).source).toBe("unknown");
});

test("a repository without a commit gives the revision unknown, one line (it gave \"HEAD\" and \"unknown\", and the label broke the build)", () => {
  expect(run(repository()).revision).toBe("unknown");
  const dir = repository();
  const commit = Bun.spawnSync(["git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one"]);
  expect(commit.exitCode).toBe(0);
  expect(run(dir).revision).toMatch(/^[0-9a-f]{40}$/);
});
