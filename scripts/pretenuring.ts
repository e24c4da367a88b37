/**
 * `npm run bench:pretenuring [-- --calls N] [-- --concurrency C [--kind K]]`: which object and array literals
 * V8 allocates in the old generation (pretenures) while the client makes calls. In memory by
 * default (scripts/bench/overhead.ts, the common path); with `--concurrency`, over loopback against
 * the benchmark's server (library-undici, or another client of scripts/bench/client.ts). A pretenured literal that points at a call's objects
 * keeps them alive until a full collection: see docs/architecture.md. Expected: only Effect's own
 * default tracer's `events` array and status objects.
 */
import { execFileSync, spawn } from "node:child_process"
import { option } from "./bench/args.js"
import { startServer } from "./bench/processes.js"

const calls = option("--calls", "60000")
const concurrency = option("--concurrency", "")
const kind = option("--kind", "library-undici")

const probe = (args: ReadonlyArray<string>) =>
  new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      [
        "--expose-gc",
        "--allow-natives-syntax",
        "--import",
        "./scripts/pretenuring/register.mjs",
        "--import",
        "tsx",
        ...args
      ],
      { env: { ...process.env, TSX_TSCONFIG_PATH: "tsconfig.bench.json" }, stdio: ["ignore", "inherit", "inherit"] }
    )
    child.on("close", (code) => resolve(code ?? 1))
  })

execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
if (concurrency === "") {
  process.exitCode = await probe(["scripts/bench/overhead.ts", calls, "1", "common"])
} else {
  const server = await startServer()
  try {
    process.exitCode = await probe(["scripts/bench/client.ts", kind, server.url, calls, concurrency])
  } finally {
    server.stop()
  }
}
