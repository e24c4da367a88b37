/**
 * `npm run bench:batch [-- --persons N] [-- --rounds N] [-- --concurrency N]`: many persons through
 * `PersonData.getMany` against the benchmark's loopback server, beside raw undici making the same
 * calls at the same concurrency, the two alternating, each run in a process of its own. Reports
 * calls per second (median of the rounds, and its ratio to raw undici), CPU per call, and the heap:
 * its growth after the run (forced GCs) and its highest sampled value above the start.
 */
import { execFileSync } from "node:child_process"
import * as Os from "node:os"
import { median, option, rotated } from "./bench/args.js"
import type { BatchMeasurement } from "./bench/batch.js"
import { runMeasurement, startServer } from "./bench/processes.js"

const persons = Number(option("--persons", "100000"))
const rounds = Number(option("--rounds", "3"))
const concurrency = Number(option("--concurrency", "32"))
const kinds = ["library-getMany", "library-forEach", "raw-undici"]

const server = await startServer()
const runChild = (kind: string) =>
  runMeasurement<BatchMeasurement>("scripts/bench/batch.ts", [kind, server.url, String(persons), String(concurrency)])

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`

execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
const results = new Map<string, Array<BatchMeasurement>>()
try {
  for (let round = 0; round < rounds; round++) {
    // Rotate the order so that no client always runs first (or last).
    for (const kind of rotated(kinds, round)) {
      const result = await runChild(kind)
      if (result.succeeded !== persons) throw new Error(`${kind}: ${result.succeeded} of ${persons} succeeded`)
      results.set(kind, [...(results.get(kind) ?? []), result])
      process.stderr.write(`  ${kind} round ${round + 1}: ${result.callsPerSecond.toFixed(0)} calls/s\n`)
    }
  }
} finally {
  server.stop()
}

const rate = (kind: string) => median(results.get(kind)!.map((m) => m.callsPerSecond))
const lines = [
  `${persons.toLocaleString("en-US")} persons at concurrency ${concurrency}, ${rounds} alternating rounds, medians; ` +
  `${Os.cpus().length} cores, Node ${process.version}`,
  "",
  "| client | calls/s | vs raw undici | CPU us/call | heap growth after | heap peak above start |",
  "|---|---:|---:|---:|---:|---:|"
]
for (const kind of kinds) {
  const all = results.get(kind)!
  lines.push(
    `| ${kind} | ${rate(kind).toFixed(0)} | ${(rate(kind) / rate("raw-undici")).toFixed(2)}x | ${
      median(all.map((m) => m.cpuMicrosPerCall)).toFixed(1)
    } | ${mib(median(all.map((m) => m.heapAfterBytes - m.heapBeforeBytes)))} | ${
      mib(median(all.map((m) => m.heapPeakBytes - m.heapBeforeBytes)))
    } |`
  )
}
console.log(lines.join("\n"))
