/**
 * `npm run bench [-- --quick] [-- --write]`: the client's cost per call against raw undici and the
 * obvious alternatives. A plain node:http server runs in its own process; each measurement runs
 * in a child process of its own, after a warm-up, the clients alternating; every figure is the
 * median of the rounds and is also given as a ratio to raw undici. The library is measured as
 * built (`dist/`, compiled by tsc), as users run it. `--write` puts the results in
 * docs/benchmarks.md.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import { flag, median, option, rotated } from "./bench/args.js"
import { type Kind, KINDS, type Measurement } from "./bench/client.js"
import { runMeasurement, startServer } from "./bench/processes.js"

const quick = flag("--quick")
const calls = Number(option("--calls", quick ? "3000" : "20000"))
const rounds = Number(option("--rounds", quick ? "1" : "5"))
const concurrencies = option("--concurrency", "1,32,256").split(",").map(Number)
// Diagnostics: transport-only (the library's undici transport alone, driven through Effect), and
// platform-fetch-untraced (FetchHttpClient by hand without its span, as the fetch adapter runs it).
const kinds = option("--kinds", [...KINDS, "transport-only", "platform-fetch-untraced"].join(",")).split(",") as Array<
  Kind
>

const runChild = (kind: Kind, url: string, concurrency: number, count = calls) =>
  runMeasurement<Measurement>("scripts/bench/client.ts", [kind, url, String(count), String(concurrency)])

execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
const server = await startServer()
const results = new Map<string, Array<Measurement>>()
try {
  for (const concurrency of concurrencies) {
    for (let round = 0; round < rounds; round++) {
      // Alternate the order so that no client always runs first (or last) on a warm machine.
      const order = rotated(kinds, round)
      for (const kind of order) {
        const result = await runChild(kind, server.url, concurrency)
        const key = `${kind}@${concurrency}`
        results.set(key, [...(results.get(key) ?? []), result])
        process.stderr.write(`  ${key} round ${round + 1}: ${result.cpuMicrosPerCall.toFixed(1)} us/call\n`)
      }
    }
  }
} finally {
  server.stop()
}

interface Row {
  readonly kind: Kind
  readonly concurrency: number
  readonly cpu: number
  /** Against raw undici, round by round (the two ran in the same round, minutes apart at most): the median ratio. */
  readonly cpuVsRaw: number | undefined
  readonly rate: number
  readonly rateVsRaw: number | undefined
  readonly p50: number
  readonly p99: number
  readonly heap: number
  readonly gc: number
}
/**
 * The median over rounds of `kind`'s figure divided by raw undici's in the same round. The machine's
 * speed drifts from minute to minute (shared cores), and a ratio of two runs of one round cancels
 * more of that drift than a ratio of two medians taken from different rounds.
 */
const pairedRatio = (
  kind: Kind,
  concurrency: number,
  figure: (m: Measurement) => number,
  base: Kind = "raw-undici"
) => {
  const own = results.get(`${kind}@${concurrency}`)
  const other = results.get(`${base}@${concurrency}`)
  return own === undefined || other === undefined
    ? undefined
    : median(own.map((m, i) => figure(m) / figure(other[i]!)))
}
const rows: Array<Row> = []
for (const concurrency of concurrencies) {
  for (const kind of kinds) {
    const all = results.get(`${kind}@${concurrency}`)!
    rows.push({
      kind,
      concurrency,
      cpu: median(all.map((m) => m.cpuMicrosPerCall)),
      cpuVsRaw: pairedRatio(kind, concurrency, (m) => m.cpuMicrosPerCall),
      rate: median(all.map((m) => m.callsPerSecond)),
      rateVsRaw: pairedRatio(kind, concurrency, (m) => m.callsPerSecond),
      p50: median(all.map((m) => m.p50Millis)),
      p99: median(all.map((m) => m.p99Millis)),
      heap: median(all.map((m) => m.heapDeltaBytes)),
      gc: median(all.map((m) => m.gcMicrosPerCall))
    })
  }
}
const rowOf = (kind: Kind, concurrency: number) => rows.find((r) => r.kind === kind && r.concurrency === concurrency)
const times = (value: number | undefined) => (value === undefined ? "" : `${value.toFixed(2)}x`)

const header =
  "| client | concurrency | CPU us/call | vs raw | vs floor | GC us/call | calls/s | vs raw | vs floor | p50 ms | p99 ms | heap growth |"
const lines = [header, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for (const row of rows) {
  // Against the physical floor: plain JavaScript over undici's dispatch, with a handler of its own.
  const vsFloor = (figure: (m: Measurement) => number) =>
    times(pairedRatio(row.kind, row.concurrency, figure, "plain-dispatch"))
  lines.push(
    `| ${row.kind} | ${row.concurrency} | ${row.cpu.toFixed(1)} | ${times(row.cpuVsRaw)} | ${
      vsFloor((m) => m.cpuMicrosPerCall)
    } | ${row.gc.toFixed(1)} | ${row.rate.toFixed(0)} | ${times(row.rateVsRaw)} | ${
      vsFloor((m) => m.callsPerSecond)
    } | ${row.p50.toFixed(2)} | ${row.p99.toFixed(2)} | ${(row.heap / 1024).toFixed(0)} KiB |`
  )
}
const table = lines.join("\n")

// The goal of the default client: at most 1.2x raw undici's CPU per call, at least 0.9x its calls/s;
// shown too with a tracer installed (the library then makes every span).
const goalLines = (["library-undici", "library-undici-traced"] as const).flatMap((kind) =>
  concurrencies.flatMap((concurrency) => {
    const row = rowOf(kind, concurrency)
    if (row?.cpuVsRaw === undefined || row.rateVsRaw === undefined) return []
    const each = (results.get(`${kind}@${concurrency}`) ?? []).map((m, i) =>
      (m.cpuMicrosPerCall / results.get(`raw-undici@${concurrency}`)![i]!.cpuMicrosPerCall).toFixed(2)
    )
    const met = row.cpuVsRaw <= 1.2 && row.rateVsRaw >= 0.9
    return [
      `- ${kind}, concurrency ${concurrency}: CPU ${times(row.cpuVsRaw)} (rounds: ${each.join(", ")}), calls/s ${
        times(row.rateVsRaw)
      }: ${met ? "met" : "not met"}`
    ]
  })
)
const goalBlock = goalLines.length === 0
  ? ""
  : `\nAgainst raw undici, the median of the rounds' ratios (goal: CPU at most 1.2x, calls/s at least 0.9x):\n${
    goalLines.join("\n")
  }\n`

// The fetch adapter (HttpTransport.layerHttpClient) against the platform client it wraps, driven
// by hand: the adapter may add at most 15% CPU per call. It runs the client with the platform's own
// span turned off (the client records its own), so it is compared with the client run so by hand.
const cpuOf = (kind: Kind, concurrency: number) => rowOf(kind, concurrency)?.cpu
const adapterLines = concurrencies.flatMap((concurrency) => {
  const adapter = cpuOf("adapter-fetch", concurrency)
  return (["platform-fetch-untraced", "platform-fetch"] as const).flatMap((kind) => {
    const platform = cpuOf(kind, concurrency)
    const paired = pairedRatio("adapter-fetch", concurrency, (m) => m.cpuMicrosPerCall, kind)
    return adapter === undefined || platform === undefined ? [] : [
      `- concurrency ${concurrency}: adapter-fetch ${adapter.toFixed(1)} us/call, ${kind} ${
        platform.toFixed(1)
      } us/call: ${times(paired)} (median of the rounds' ratios)${
        kind === "platform-fetch-untraced" ? " (target: at most 1.15x)" : ""
      }`
    ]
  })
})
const adapterBlock = adapterLines.length === 0
  ? ""
  : `\nThe fetch adapter against the FetchHttpClient it wraps, by hand:\n${adapterLines.join("\n")}\n`

// Memory: 100,000 calls through the library must end with the heap within 10 MB of where it began.
const memoryCalls = quick ? 20_000 : 100_000
const memory = flag("--no-memory") ? undefined : await (async () => {
  const again = await startServer()
  try {
    return await runChild("library-undici", again.url, 32, memoryCalls)
  } finally {
    again.stop()
  }
})()
const heapLine = memory === undefined ?
  "(memory run skipped: --no-memory)" :
  `Heap after ${
    memoryCalls.toLocaleString("en-US")
  } library-undici calls at concurrency 32, minus before (after forced GCs): ${
    (memory.heapDeltaBytes / 2 ** 20).toFixed(2)
  } MiB (target: within 10 MB).`
const machine = `${Os.cpus().length} cores (${Os.cpus()[0]?.model.trim()}), ${
  (Os.totalmem() / 2 ** 30).toFixed(0)
} GiB, Node ${process.version}, ${Os.platform()} ${Os.release()}`
const command = `npm run bench${process.argv.slice(2).length > 0 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`
console.log(`\n${calls} calls per measurement, ${rounds} round(s), medians; ${machine}\n`)
console.log(table)
console.log(goalBlock)
console.log(adapterBlock)
console.log(`\n${heapLine}`)

if (flag("--write")) {
  const date = new Date().toISOString().slice(0, 10)
  const path = "docs/benchmarks.md"
  const existing = Fs.existsSync(path) ? Fs.readFileSync(path, "utf8") : ""
  const start = existing.indexOf("<!-- results -->")
  const end = existing.indexOf("<!-- /results -->")
  const block =
    `<!-- results -->\nMeasured ${date} with \`${command}\` on ${machine}: ${calls} calls per measurement, ${rounds} round(s), medians.\n\n${table}\n${goalBlock}${adapterBlock}\n${heapLine}\n<!-- /results -->`
  Fs.writeFileSync(
    path,
    start >= 0 && end > start ? existing.slice(0, start) + block + existing.slice(end + 17) : `${existing}\n${block}\n`
  )
  console.log(`\nwritten to ${path}`)
}
