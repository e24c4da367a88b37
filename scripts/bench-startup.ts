/**
 * `npm run bench:startup [-- --rounds R] [--cases a,b] [--other-bin P] [--package effect4]`: how long a whole process takes to start,
 * do one small thing and exit, and its peak memory, for the library's import and the command line's
 * short commands (against the mock on loopback). Each round runs every case once, in an order that
 * rotates from round to round; a case's figure is the median over rounds of its time divided by the
 * time of `import("effect")` in the same round, so that the machine's drift cancels. Runs what
 * `npm run build` wrote (dist/ and the `bin` of package.json); `--other-bin P` runs each command of
 * the executable at P too, in the same rounds (another build, say, to compare with). `--package
 * effect4` measures the Effect 4 line instead (build it first: `npm run build` in effect4/), its
 * `import("effect")` the baseline (Effect 4, resolved from there).
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { median, option, rotated } from "./bench/args.js"

interface Case {
  readonly name: string
  readonly args: ReadonlyArray<string>
  readonly input?: string
}

interface Run {
  readonly millis: number
  readonly peakMiB: number
}

const root = Path.resolve(process.cwd(), option("--package", "."))
const pkg = JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8"))
const bin = Path.join(root, pkg.bin["effect-clinical"])
/** A module the package exports, as built. */
const exported = (name: string): string => Path.join(root, pkg.exports[name].default)
const rounds = Number(option("--rounds", "15"))
const BASELINE = "import(\"effect\")"

// The child reports its own peak resident memory as it exits, on a line of its own on stderr
// (a pipe, written synchronously on Linux). Every case, the baseline included, carries this hook.
const peakHook = "data:text/javascript," + encodeURIComponent(
  "process.on('exit', () => process.stderr.write('\\npeak-rss-kib ' + process.resourceUsage().maxRSS + '\\n'))"
)

// A batch writes its results to a file of its own each run: OUT stands for a new one.
const scratch = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-startup-"))
const OUT = "<out>"
let outs = 0

const runOnce = (c: Case, env: NodeJS.ProcessEnv): Promise<Run> =>
  new Promise((resolve, reject) => {
    const args = c.args.map((arg) => (arg === OUT ? Path.join(scratch, `${outs++}.ndjson`) : arg))
    const started = performance.now()
    const child = spawn(process.execPath, ["--import", peakHook, ...args], { cwd: root, env })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk))
    child.stderr.on("data", (chunk: Buffer) => (err += chunk))
    child.stdin.end(c.input ?? "")
    child.on("error", reject)
    child.on("close", (code) => {
      const millis = performance.now() - started
      const peak = /peak-rss-kib (\d+)/.exec(err)
      if (code !== 0 || peak === null) {
        reject(new Error(`${c.name} exited ${code}: ${err.trim()}\n${out.trim()}`))
      } else {
        resolve({ millis, peakMiB: Number(peak[1]) / 1024 })
      }
    })
  })

const main = async () => {
  const { MockClinicalServer } = await import(exported("./testing"))
  const mock = await MockClinicalServer.start()
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("CLINICAL_"))),
    CLINICAL_BASE_URL: mock.url,
    CLINICAL_APPLICATION_ID: mock.applicationId
  }
  const personsFile = Path.join(scratch, "persons.txt")
  Fs.writeFileSync(
    personsFile,
    Array.from({ length: 2000 }, (_, i) => mock.persons[i % mock.persons.length].personUid).join("\n") + "\n"
  )
  const all: ReadonlyArray<Case> = [
    { name: "node -e 0", args: ["-e", "0"] },
    { name: BASELINE, args: ["--input-type=module", "-e", "await import(\"effect\")"] },
    {
      name: "the library's import",
      args: ["--input-type=module", "-e", `await import(${JSON.stringify(exported("."))})`]
    },
    { name: "effect-clinical --help", args: [bin, "--help"] },
    { name: "effect-clinical token", args: [bin, "token"] },
    { name: "effect-clinical medications -", args: [bin, "medications", "-"], input: `${mock.persons[0].personUid}\n` },
    { name: "effect-clinical probe", args: [bin, "probe"] },
    // A long command beside the short ones: its start-up, and its throughput over 2,000 calls.
    {
      name: "effect-clinical batch (2,000 persons)",
      args: [bin, "batch", "medications", "--persons-file", personsFile, "--out", OUT]
    }
  ]
  const otherBin = option("--other-bin", "")
  const withOther = otherBin === "" ?
    all :
    all.flatMap((c) =>
      c.args[0] === bin ? [c, { ...c, name: `${c.name} [${otherBin}]`, args: [otherBin, ...c.args.slice(1)] }] : [c]
    )
  const chosen = option("--cases", "").split(",").filter((name) => name !== "")
  const cases = withOther.filter((c) =>
    c.name === BASELINE || chosen.length === 0 || chosen.some((n) => c.name.includes(n))
  )
  const runs = new Map<string, Array<Run & { ratio: number }>>(cases.map((c) => [c.name, []]))
  try {
    for (const c of cases) await runOnce(c, env) // warm the file system cache
    for (let round = 0; round < rounds; round++) {
      const order = rotated(cases, round)
      const results = new Map<string, Run>()
      for (const c of order) results.set(c.name, await runOnce(c, env))
      const baseline = results.get(BASELINE)!.millis
      for (const [name, run] of results) runs.get(name)!.push({ ...run, ratio: run.millis / baseline })
      process.stderr.write(`round ${round + 1}/${rounds}\n`)
    }
  } finally {
    await mock.close()
    Fs.rmSync(scratch, { recursive: true, force: true })
  }
  console.log(`Node ${process.version}, ${rounds} rounds; ratio: a case's time / import("effect")'s, same round\n`)
  console.log("| what | median ms | ratio (median) | ratio range | peak MiB (median) |")
  console.log("|---|---:|---:|---:|---:|")
  for (const [name, list] of runs) {
    const ratios = list.map((run) => run.ratio)
    console.log(
      `| ${name} | ${median(list.map((run) => run.millis)).toFixed(0)} | ${median(ratios).toFixed(2)}x | ` +
        `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)} | ` +
        `${median(list.map((run) => run.peakMiB)).toFixed(0)} |`
    )
  }
}

await main()
