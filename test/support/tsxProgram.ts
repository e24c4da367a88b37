/**
 * Starts a TypeScript program as the docs tell users to run one that must shut down on a signal:
 * `node --import tsx program.ts`, one process. The `tsx` command instead relays SIGTERM to a child
 * process and, when that child has not answered within 30 ms (busy, or on a loaded machine),
 * SIGKILLs it and exits 143: the jobs in hand never finish. test/Examples.test.ts shows both.
 */
import { type ChildProcessWithoutNullStreams, spawn, type SpawnOptionsWithoutStdio } from "node:child_process"

export const spawnTsx = (program: string, options: SpawnOptionsWithoutStdio = {}): ChildProcessWithoutNullStreams =>
  spawn(process.execPath, ["--import", "tsx", program], options)
