/**
 * `effect-clinical queue work` in a process of its own, as an operations team runs it: the built
 * executable, only the environment given, its stderr captured. Used by the fleet's and the queue
 * commands' tests.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { BIN } from "./Cli.js"

export interface Exited {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stderr: string
}

export interface Started {
  readonly child: ChildProcess
  readonly exited: Promise<Exited>
  /** What it wrote to stderr so far. */
  readonly stderr: () => string
}

/** Starts `queue work` (`--until-empty` unless told) writing shards to `shards`, with `env` as its whole environment. */
export const start = (
  env: Record<string, string>,
  shards: string,
  args: ReadonlyArray<string> = [],
  untilEmpty = true
): Started => {
  const child = spawn(
    process.execPath,
    [
      BIN,
      "queue",
      "work",
      ...(untilEmpty ? ["--until-empty"] : []),
      "--shards",
      shards,
      "--concurrency",
      "16",
      "--progress-every",
      "1",
      ...args
    ],
    { env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env }, stdio: ["ignore", "ignore", "pipe"] }
  )
  let stderr = ""
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  return {
    child,
    stderr: () => stderr,
    exited: new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stderr })))
  }
}
