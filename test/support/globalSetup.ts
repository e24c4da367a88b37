/**
 * Builds `dist/` (tsc, then the executable's bundle) once before any test file runs: the tests
 * that spawn the `effect-clinical` executable or pack the library use the build, exactly as users
 * get it, and no two test files write `dist/` at the same time.
 */
import { execFileSync } from "node:child_process"
import * as Path from "node:path"

export default function setup(): void {
  const root = Path.resolve(import.meta.dirname, "../..")
  execFileSync(process.execPath, [Path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"], {
    cwd: root,
    stdio: "inherit"
  })
  execFileSync(process.execPath, [Path.join(root, "scripts/bundle-cli.mjs")], { cwd: root, stdio: "inherit" })
}
