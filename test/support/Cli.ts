/**
 * Runs the built `effect-clinical` executable as a user does: a child process with only the
 * environment given (nothing of the test's own `CLINICAL_*`), standard input from a string, and its
 * exit code, stdout and stderr captured.
 */
import { MockClinicalServer } from "effect-clinical/testing"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export const BIN = Path.resolve(import.meta.dirname, "../../dist/bin/effect-clinical.js")

export interface Ran {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunOptions {
  readonly env?: Record<string, string> | undefined
  readonly input?: string | Buffer | undefined
  readonly cwd?: string | undefined
  /** Called with the child once started, e.g. to interrupt it. */
  readonly started?: ((child: ReturnType<typeof spawn>, output: { stdout: string; stderr: string }) => void) | undefined
  readonly timeoutMillis?: number | undefined
}

/** Runs `effect-clinical ...args` and resolves once it exited. */
export const run = (args: ReadonlyArray<string>, options: RunOptions = {}): Promise<Ran> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...options.env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    const output = { stdout: "", stderr: "" }
    child.stdout.on("data", (chunk: Buffer) => output.stdout += chunk.toString("utf8"))
    child.stderr.on("data", (chunk: Buffer) => output.stderr += chunk.toString("utf8"))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`effect-clinical ${args.join(" ")} did not exit in time:\n${output.stdout}\n${output.stderr}`))
    }, options.timeoutMillis ?? 30_000)
    child.on("error", reject)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, ...output })
    })
    child.stdin.end(options.input ?? "")
    options.started?.(child, output)
  })

/** A mock served on loopback and a temporary directory: what a file of command-line tests runs against. */
export const setUp = async (prefix: string): Promise<{ mock: MockClinicalServer.Started; dir: string }> => ({
  mock: await MockClinicalServer.start(),
  dir: Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
})

/** Stops what {@link setUp} started. */
export const tearDown = async ({ dir, mock }: { mock: MockClinicalServer.Started | undefined; dir: string }) => {
  await mock?.close()
  if (dir !== "") Fs.rmSync(dir, { recursive: true, force: true })
}

/** The settings of a command against the service at `url` (the mock's ApplicationId unless given): quick retries. */
export const settingsFor = (url: string, applicationId: string = MockClinicalServer.demoApplicationId) => ({
  CLINICAL_BASE_URL: url,
  CLINICAL_APPLICATION_ID: applicationId,
  CLINICAL_RETRY_BASE_DELAY: "5ms",
  CLINICAL_RETRY_MAX_DELAY: "20ms"
})
