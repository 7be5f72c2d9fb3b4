// The real sbx binary for the tests: $SBX, else one built from this checkout
// with go (the tests run the binary, never a fake).

import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

// Compiled to clients/typescript/dist/test/: the checkout is four levels up.
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");

let built: string | undefined;

export function sbxBinary(): string {
  if (process.env.SBX) return process.env.SBX;
  if (built) return built;
  if (!existsSync(join(REPO, "cmd", "sbx"))) throw new Error("no sbx binary: set $SBX (or run from the sbx checkout)");
  const dir = mkdtempSync(join(tmpdir(), "sbx-tstest-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, "sbx");
  execFileSync("go", ["build", "-o", out, "./cmd/sbx"], { cwd: REPO, stdio: "inherit" });
  built = out;
  return out;
}

const dirs: string[] = [];
process.on("exit", () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** tempDir makes a directory (mode 0755 unless given), removed when the tests end. */
export function tempDir(prefix: string, base = tmpdir(), mode = 0o755): string {
  const d = mkdtempSync(join(base, prefix));
  chmodSync(d, mode);
  dirs.push(d);
  return d;
}
