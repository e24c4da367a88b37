/**
 * `npm run soak [-- --calls N]`: 10,000 medication calls at concurrency 64 through the default
 * undici transport against the mock on loopback, with seeded faults (10% 500/503, 3% dropped
 * connections, 2% slower than the 1 s attempt timeout, 1% 429 with Retry-After: 1) and every token
 * revoked each 1,000 calls. Prints what happened and exits non-zero if a bound is missed.
 */
import { Effect } from "effect"
import { checks, runSoak } from "./soak-run.js"

const argument = (name: string): string | undefined => {
  const i = process.argv.indexOf(name)
  return i < 0 ? undefined : process.argv[i + 1]
}

const calls = Number(argument("--calls") ?? 10_000)
const seed = Number(argument("--seed") ?? 2026)
let unhandledRejections = 0
process.on("unhandledRejection", () => unhandledRejections++)

const heap = () => {
  globalThis.gc?.()
  return process.memoryUsage().heapUsed
}
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

const heapBefore = heap()
const report = await Effect.runPromise(
  runSoak({
    calls,
    concurrency: 64,
    revokeEvery: 1_000,
    seed,
    transport: "http",
    client: { requestTimeout: "1 second" },
    slowResponse: "1500 millis"
  })
)
const heapAfter = heap()

const table = (record: Readonly<Record<string, number>>) =>
  Object.entries(record).map(([key, value]) => `${key}: ${value}`).join(", ") || "none"

console.log(`Soak: ${report.calls} calls, concurrency 64, seed ${seed}, through layerUndici against the mock`)
console.log(`  succeeded:           ${report.succeeded} (${(100 * report.succeeded / report.calls).toFixed(2)}%)`)
console.log(`  failed by error tag: ${table(report.failedByTag)}`)
console.log(`  defects:             ${report.defects}; unhandled rejections: ${unhandledRejections}`)
console.log(`  attempts per call:   mean ${report.attemptsMean.toFixed(3)}, max ${report.attemptsMax}`)
console.log(`  token requests:      ${report.tokenRequests} (${report.revocations} revocations)`)
console.log(`  retries by cause:    ${table(report.retriesByCause)}`)
console.log(
  `  mock responses:      ${table(report.responsesByStatus)}; dropped connections: ${report.droppedConnections}`
)
console.log(`  wall time:           ${(report.wallMillis / 1000).toFixed(1)} s`)
console.log(
  `  heap:                ${mib(heapBefore)} before, ${mib(heapAfter)} after${globalThis.gc ? " (after GC)" : ""}`
)

let ok = unhandledRejections === 0
for (const [check, passed] of checks(report)) {
  console.log(`${passed ? "PASS" : "FAIL"} ${check}`)
  ok &&= passed
}
process.exitCode = ok ? 0 : 1
