/**
 * `npm run bench:lines [-- --calls 20000 --rounds 5 --concurrency 1,32,256 --adaptive --lines 3,4]`: the two Effect lines
 * side by side in one run, each against raw undici over its own undici (Effect 3's 7, Effect 4's 8),
 * on one Node (22: the Effect 4 line's floor). One loopback server (scripts/bench/server.ts); each
 * measurement in a child process of its own; the four clients alternate, round by round; every
 * figure is the median over rounds of the client's CPU per call divided by its line's raw undici
 * in the same round.
 */
import { execFileSync, spawn } from "node:child_process"
import * as Path from "node:path"
import { median, option, rotated } from "./bench/args.js"
import { type Measurement } from "./bench/client.js"
import { runMeasurement, startServer } from "./bench/processes.js"

const calls = Number(option("--calls", "20000"))
const rounds = Number(option("--rounds", "5"))
const concurrencies = option("--concurrency", "1,32,256").split(",").map(Number)
// The library's adaptive concurrency limit on (its default), for every child (see librarySettings).
const adaptive = process.argv.includes("--adaptive")
const benchEnv: Record<string, string> = adaptive ? { BENCH_ADAPTIVE_CONCURRENCY: "on" } : {}
const root = Path.resolve(import.meta.dirname, "..")

type Client = "effect3 raw-undici" | "effect3 library-undici" | "effect4 raw-undici" | "effect4 library-undici"
// `--lines 4` measures one line alone (more rounds in the same time); its rows' other columns say "-".
const lines = option("--lines", "3,4").split(",").map((line) => `effect${line}`)
const CLIENTS: ReadonlyArray<Client> = ([
  "effect3 raw-undici",
  "effect3 library-undici",
  "effect4 raw-undici",
  "effect4 library-undici"
] as const).filter((client) => lines.includes(client.split(" ")[0]!))

/** An Effect 4 measurement: effect4/bench/client.ts, in effect4/ (its own packages), through tsx. */
const runEffect4 = (kind: string, url: string, concurrency: number) =>
  new Promise<Measurement>((resolve, reject) => {
    const tsx = `file://${Path.join(root, "node_modules/tsx/dist/esm/index.mjs")}`
    const child = spawn(
      process.execPath,
      ["--expose-gc", "--import", tsx, "bench/client.ts", kind, url, String(calls), String(concurrency)],
      {
        cwd: Path.join(root, "effect4"),
        env: { ...process.env, ...benchEnv, TSX_TSCONFIG_PATH: "tsconfig.bench.json" }
      }
    )
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk))
    child.stderr.on("data", (chunk: Buffer) => (err += chunk))
    child.on(
      "close",
      (code) => code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop()!)) : reject(new Error(`${kind}: ${err}`))
    )
  })

const measure = (client: Client, url: string, concurrency: number): Promise<Measurement> => {
  const [line, kind] = client.split(" ") as [string, string]
  return line === "effect3"
    ? runMeasurement<Measurement>("scripts/bench/client.ts", [kind, url, String(calls), String(concurrency)], benchEnv)
    : runEffect4(kind, url, concurrency)
}

// Both lines are measured as built (dist/), as users run them.
execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit", cwd: Path.join(root, "effect4") })
const server = await startServer()
const results = new Map<string, Array<Measurement>>()
try {
  for (const concurrency of concurrencies) {
    for (let round = 0; round < rounds; round++) {
      for (const client of rotated(CLIENTS, round)) {
        const result = await measure(client, server.url, concurrency)
        const key = `${client}@${concurrency}`
        results.set(key, [...(results.get(key) ?? []), result])
        process.stderr.write(`  ${key} round ${round + 1}: ${result.cpuMicrosPerCall.toFixed(1)} us/call\n`)
      }
    }
  }
} finally {
  server.stop()
}

/** The median over rounds of `client`'s CPU per call over its line's raw undici in the same round. */
const ratio = (client: Client, concurrency: number): string => {
  const own = results.get(`${client}@${concurrency}`)
  const raw = results.get(`${client.split(" ")[0]} raw-undici@${concurrency}`)
  return own && raw ? `${median(own.map((m, i) => m.cpuMicrosPerCall / raw[i]!.cpuMicrosPerCall)).toFixed(2)}x` : "-"
}
const cpu = (client: Client, concurrency: number): string => {
  const own = results.get(`${client}@${concurrency}`)
  return own ? median(own.map((m) => m.cpuMicrosPerCall)).toFixed(1) : "-"
}

console.log(
  `Node ${process.version}, ${calls} calls x ${rounds} rounds, adaptive concurrency ${
    adaptive ? "on" : "off"
  }, CPU per call (us) and vs the line's raw undici`
)
console.log(
  "| concurrency | Effect 3 raw undici | Effect 3 library | vs raw | Effect 4 raw undici | Effect 4 library | vs raw |"
)
console.log("|---|---|---|---|---|---|---|")
for (const c of concurrencies) {
  console.log(
    `| ${c} | ${cpu("effect3 raw-undici", c)} | ${cpu("effect3 library-undici", c)} | ${
      ratio("effect3 library-undici", c)
    } | ${cpu("effect4 raw-undici", c)} | ${cpu("effect4 library-undici", c)} | ${ratio("effect4 library-undici", c)} |`
  )
}
