/**
 * `npm run bench:proxy [-- --calls N --rounds R --concurrency 1,32]`: the client's CPU per call
 * through an HTTP proxy (Debian's tinyproxy, with basic auth, in its own process) against the same
 * calls going direct, to the benchmark's loopback server. Each measurement runs in a child process
 * of its own (scripts/bench/client.ts), the two alternating round by round; "proxied / direct" is
 * the median of the per-round ratios. The proxy's own CPU is not the client's and is not counted.
 */
import { execFileSync } from "node:child_process"
import * as Tinyproxy from "../test/support/Tinyproxy.js"
import { median, option, rotated } from "./bench/args.js"
import type { Kind, Measurement } from "./bench/client.js"
import { runMeasurement, startServer } from "./bench/processes.js"

const calls = Number(option("--calls", "10000"))
const rounds = Number(option("--rounds", "5"))
const concurrencies = option("--concurrency", "1,32").split(",").map(Number)
const kinds: ReadonlyArray<Kind> = ["library-undici", "library-undici-proxied"]

execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
const server = await startServer()
const proxy = await Tinyproxy.start()
const results = new Map<string, Array<Measurement>>()
try {
  for (const concurrency of concurrencies) {
    for (let round = 0; round < rounds; round++) {
      for (const kind of rotated(kinds, round)) {
        const result = await runMeasurement<Measurement>(
          "scripts/bench/client.ts",
          [kind, server.url, String(calls), String(concurrency)],
          { BENCH_PROXY: proxy.url }
        )
        results.set(`${kind}@${concurrency}`, [...(results.get(`${kind}@${concurrency}`) ?? []), result])
        process.stderr.write(
          `  ${kind}@${concurrency} round ${round + 1}: ${result.cpuMicrosPerCall.toFixed(1)} us/call\n`
        )
      }
    }
  }
} finally {
  server.stop()
  await proxy.stop()
}

const rows = [
  "| concurrency | CPU us/call direct | CPU us/call proxied | proxied / direct (CPU) | rounds | calls/s direct | calls/s proxied |",
  "|---:|---:|---:|---:|---|---:|---:|"
]
for (const concurrency of concurrencies) {
  const direct = results.get(`library-undici@${concurrency}`)!
  const proxied = results.get(`library-undici-proxied@${concurrency}`)!
  const ratios = proxied.map((p, i) => p.cpuMicrosPerCall / direct[i]!.cpuMicrosPerCall)
  const cpu = (ms: ReadonlyArray<Measurement>) => median(ms.map((m) => m.cpuMicrosPerCall)).toFixed(1)
  const rate = (ms: ReadonlyArray<Measurement>) => median(ms.map((m) => m.callsPerSecond)).toFixed(0)
  rows.push(
    `| ${concurrency} | ${cpu(direct)} | ${cpu(proxied)} | ${median(ratios).toFixed(2)}x | ${
      ratios.map((r) => r.toFixed(2)).join(", ")
    } | ${rate(direct)} | ${rate(proxied)} |`
  )
}
process.stdout.write(`${rows.join("\n")}\n`)
