/**
 * `npm run bench:compare -- <revision> [--calls N] [--rounds R] [--concurrency 1,32,256] [--kinds k1,k2]`:
 * the library's cost per call at another revision and in this working tree, side by side, for a
 * change that must not cost speed (a refactor, say). The revision is checked out into a temporary
 * git worktree and built there; this tree is built too. Each round runs the same measurement
 * (`scripts/bench/client.ts`, one child process each) at the revision, here, and raw undici, in an
 * order that alternates from round to round; the figure is the median over rounds of here / there,
 * paired within the round, so that the machine's drift cancels.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { median, option, rotated } from "./bench/args.js"
import type { Kind, Measurement } from "./bench/client.js"
import { runMeasurement, startServer } from "./bench/processes.js"

const revision = process.argv[2]
if (revision === undefined || revision.startsWith("--")) {
  process.stderr.write("usage: npm run bench:compare -- <revision> [--calls N] [--rounds R] [--concurrency 1,32,256]\n")
  process.exit(2)
}
const calls = option("--calls", "20000")
const rounds = Number(option("--rounds", "5"))
const concurrencies = option("--concurrency", "1,32,256").split(",")
const kinds = option("--kinds", "library-undici,library-undici-traced").split(",") as Array<Kind>

const here = process.cwd()
const there = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-compare-"))
const git = (...args: Array<string>) => execFileSync("git", args, { cwd: here, stdio: "inherit" })
git("worktree", "add", "--detach", there, revision)
try {
  // The same dependencies: only the library's own code differs.
  Fs.symlinkSync(Path.join(here, "node_modules"), Path.join(there, "node_modules"), "dir")
  for (const directory of [there, here]) {
    execFileSync(process.execPath, [Path.join(here, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"], {
      cwd: directory,
      stdio: "inherit"
    })
  }
  const server = await startServer()
  const runs: Array<{ readonly label: string; readonly cwd: string; readonly kind: Kind }> = [
    ...kinds.flatMap((kind) => [
      { label: `${kind} at ${revision}`, cwd: there, kind },
      { label: `${kind} here`, cwd: here, kind }
    ]),
    { label: "raw-undici", cwd: here, kind: "raw-undici" }
  ]
  const results = new Map<string, Array<Measurement>>()
  try {
    for (const concurrency of concurrencies) {
      for (let round = 0; round < rounds; round++) {
        const order = rotated(runs, round)
        for (const run of order) {
          const measured = await runMeasurement<Measurement>(
            Path.join(run.cwd, "scripts/bench/client.ts"),
            [run.kind, server.url, calls, concurrency],
            {},
            run.cwd
          )
          const key = `${run.label}@${concurrency}`
          results.set(key, [...(results.get(key) ?? []), measured])
          process.stderr.write(`  ${key} round ${round + 1}: ${measured.cpuMicrosPerCall.toFixed(1)} us/call\n`)
        }
      }
    }
  } finally {
    server.stop()
  }
  const lines = [
    `${calls} calls per measurement, ${rounds} rounds, medians; "here / there" is paired round by round.`,
    "",
    "| client | concurrency | CPU us/call there | CPU us/call here | here / there (CPU) | rounds | calls/s there | calls/s here | here / there (calls/s) |",
    "|---|---:|---:|---:|---:|---|---:|---:|---:|"
  ]
  for (const concurrency of concurrencies) {
    for (const kind of kinds) {
      const before = results.get(`${kind} at ${revision}@${concurrency}`)!
      const after = results.get(`${kind} here@${concurrency}`)!
      const ratios = (figure: (m: Measurement) => number) => after.map((m, i) => figure(m) / figure(before[i]!))
      const cpu = ratios((m) => m.cpuMicrosPerCall)
      const rate = ratios((m) => m.callsPerSecond)
      lines.push(
        `| ${kind} | ${concurrency} | ${median(before.map((m) => m.cpuMicrosPerCall)).toFixed(1)} | ${
          median(after.map((m) => m.cpuMicrosPerCall)).toFixed(1)
        } | ${median(cpu).toFixed(2)}x | ${cpu.map((r) => r.toFixed(2)).join(", ")} | ${
          median(before.map((m) => m.callsPerSecond)).toFixed(0)
        } | ${median(after.map((m) => m.callsPerSecond)).toFixed(0)} | ${median(rate).toFixed(2)}x |`
      )
    }
    const raw = results.get(`raw-undici@${concurrency}`)!
    lines.push(
      `| raw-undici (reference) | ${concurrency} | | ${median(raw.map((m) => m.cpuMicrosPerCall)).toFixed(1)} | | | | ${
        median(raw.map((m) => m.callsPerSecond)).toFixed(0)
      } | |`
    )
  }
  process.stdout.write(`${lines.join("\n")}\n`)
} finally {
  git("worktree", "remove", "--force", there)
}
