/**
 * `queue collect`'s speed (docs/benchmarks.md, "The queue"): microseconds per line to merge a run's
 * shards into one file, this version beside a baseline (collect as it was at another commit, its
 * modules read with `git show` into a tree of their own), in rounds that alternate which
 * runs first. The shards are what four workers write: positions interleaved across shards and
 * shuffled within each (16 jobs at once), a medications line of about 300 bytes, 1% delivered twice.
 *
 *   npm run bench:collect -- [--lines 100000] [--shards 4] [--rounds 3] [--baseline 15c45cc]
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { collect } from "../src/cli/resultShards.js"
import { median, option, rotated } from "./bench/args.js"

const LINES = Number(option("--lines", "100000"))
const SHARDS = Number(option("--shards", "4"))
const ROUNDS = Number(option("--rounds", "3"))
const BASELINE = option("--baseline", "15c45cc")

const root = Path.resolve(import.meta.dirname, "..")
const RUN_ID = "0123456789abcdef"
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "bench-collect-"))
const shards = Path.join(dir, "shards")
Fs.mkdirSync(shards)

/** A medications line as a worker writes it. */
const line = (index: number) =>
  JSON.stringify({
    index,
    outcome: "Success",
    operation: "medications",
    items: [
      {
        Name: "Lisinopril",
        Strength: "10 mg",
        Instructions: "Take one tablet by mouth once daily",
        StartDate: "2021-03-14"
      },
      {
        Name: "Metformin",
        Strength: "500 mg",
        Instructions: "Take one tablet twice daily with meals",
        StartDate: "2019-07-02"
      }
    ]
  }) + "\n"

// Deterministic shuffles: the same shards every run.
let seed = 7
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
for (let shard = 0; shard < SHARDS; shard++) {
  const positions: Array<number> = []
  for (let index = shard; index < LINES; index += SHARDS) positions.push(index)
  // Within each 16 jobs, any order (a worker's concurrency); 1% written twice (delivered again).
  for (let i = 0; i < positions.length; i += 16) {
    const window = positions.slice(i, i + 16).sort(() => random() - 0.5)
    positions.splice(i, window.length, ...window)
  }
  const text = positions.map((index) => line(index) + (random() < 0.01 ? line(index) : "")).join("")
  Fs.writeFileSync(Path.join(shards, `bench.run-1-${RUN_ID}.worker${String(shard).padStart(4, "0")}.ndjson`), text)
}
const bytes = Fs.readdirSync(shards).reduce((sum, name) => sum + Fs.statSync(Path.join(shards, name)).size, 0)

// The baseline's module and the modules it imports, as they were at that commit, in a tree of their
// own under .scratch/ (packages resolve from the repository's node_modules above it).
const baselineRoot = Path.join(root, `.scratch/baseline-${BASELINE}`)
const materialised = (file: string): void => {
  const target = Path.join(baselineRoot, file)
  if (Fs.existsSync(target)) return
  const text = execFileSync("git", ["show", `${BASELINE}:${file}`], { cwd: root, encoding: "utf8" })
  Fs.mkdirSync(Path.dirname(target), { recursive: true })
  Fs.writeFileSync(target, text)
  for (const [, specifier] of text.matchAll(/\bfrom\s+"(\.{1,2}\/[^"]+)"/g)) {
    materialised(Path.posix.join(Path.posix.dirname(file), specifier!.replace(/\.js$/, ".ts")))
  }
}
Fs.rmSync(baselineRoot, { recursive: true, force: true })
materialised("src/cli/resultShards.ts")
const baseline = await import(Path.join(baselineRoot, "src/cli/resultShards.ts")) as {
  readonly collect: (directory: string, out: string) => Promise<{ readonly persons: number }>
}

interface Contender {
  readonly name: string
  readonly run: (out: string) => Promise<number>
}
const contenders: ReadonlyArray<Contender> = [
  { name: `baseline ${BASELINE}`, run: async (out) => (await baseline.collect(shards, out)).persons },
  {
    name: "this version",
    run: async (out) => {
      const collected = await collect(shards, out, { queue: "bench", run: 1, runId: RUN_ID, persons: LINES })
      return collected.succeeded
    }
  }
]

const micros = new Map<string, Array<number>>(contenders.map((contender) => [contender.name, []]))
let outs = 0
for (let round = 0; round < ROUNDS; round++) {
  for (const contender of rotated(contenders, round)) {
    const out = Path.join(dir, `out-${outs++}.ndjson`)
    const started = process.hrtime.bigint()
    const persons = await contender.run(out)
    const elapsed = Number(process.hrtime.bigint() - started) / 1000
    if (persons !== LINES) throw new Error(`${contender.name} collected ${persons} of ${LINES}`)
    Fs.rmSync(out)
    micros.get(contender.name)!.push(elapsed / LINES)
    console.log(`round ${round + 1}: ${contender.name.padEnd(20)} ${(elapsed / LINES).toFixed(2)} µs per line`)
  }
}
Fs.rmSync(baselineRoot, { recursive: true, force: true })
Fs.rmSync(dir, { recursive: true, force: true })

const [before, after] = contenders.map((contender) => median(micros.get(contender.name)!))
console.log(
  `\ncollect: ${LINES.toLocaleString("en")} lines in ${SHARDS} shards (${(bytes / 2 ** 20).toFixed(1)} MiB), ` +
    `${ROUNDS} rounds, medians: baseline ${before!.toFixed(2)} µs per line, this version ${after!.toFixed(2)} µs ` +
    `per line: ${(before! / after!).toFixed(1)}x faster`
)
