/**
 * The benchmarks' processes: the loopback server, and one measurement per child process, whose
 * last stdout line is its result as JSON. Children run the compiled library: tsx resolves
 * "effect-clinical" through package.json's exports (dist/) when the tsconfig it uses has no path
 * mapping to src/.
 */
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"

const childEnv = { ...process.env, TSX_TSCONFIG_PATH: "tsconfig.bench.json" }

/** Starts scripts/bench/server.ts and resolves with its base URL once it listens. */
export const startServer = () =>
  new Promise<{ url: string; stop: () => void }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "scripts/bench/server.ts"], { env: childEnv })
    child.on("error", reject)
    createInterface({ input: child.stdout }).once("line", (url) => resolve({ url, stop: () => child.kill() }))
  })

/**
 * Runs `script` with `args` (and `--expose-gc`) and resolves with the JSON of its last line; in
 * `cwd` when given (another checkout: its tsconfig.bench.json, its dist/).
 */
export const runMeasurement = <A>(
  script: string,
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  cwd?: string
) =>
  new Promise<A>((resolve, reject) => {
    const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", script, ...args], {
      env: { ...childEnv, ...env },
      ...(cwd === undefined ? {} : { cwd })
    })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk))
    child.stderr.on("data", (chunk: Buffer) => (err += chunk))
    child.on(
      "close",
      (code) =>
        code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop()!)) : reject(new Error(`${args[0]}: ${err}`))
    )
  })
