/**
 * The README's command-line session is run as written: each `$ ` line of its ```console block is a
 * shell command, run in order in one directory with `effect-clinical` on the PATH (the built bin)
 * and `CLINICAL_*` pointing at the mock on loopback, and what follows it is what it must print
 * (stdout and stderr together). The parts that change from run to run (the port, times, durations,
 * rates) are compared by shape.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { blocks } from "../../scripts/snippets.js"
import { BIN } from "../support/Cli.js"

const root = Path.resolve(import.meta.dirname, "../..")

/** The README's session: each command with the output it shows. */
const session = (): ReadonlyArray<{ readonly command: string; readonly output: string }> => {
  const readme = Fs.readFileSync(Path.join(root, "README.md"), "utf8")
  const console = blocks(readme).filter((block) => block.language === "console")
  expect(console, "README.md has one ```console block: the command-line session").toHaveLength(1)
  const steps: Array<{ command: string; output: Array<string> }> = []
  for (const line of console[0]!.text.split("\n")) {
    if (line.startsWith("$ ")) steps.push({ command: line.slice(2), output: [] })
    else steps.at(-1)!.output.push(line)
  }
  return steps.map(({ command, output }) => ({ command, output: output.join("\n") }))
}

/** The text with what differs between runs replaced by its kind. */
const shape = (text: string): string =>
  text
    .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:<port>")
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, "<time>")
    .replace(/[+-]?\d+(\.\d+)? (ms|s)\b/g, "<duration>")
    .replace(/\d+(\.\d+)?\/s/g, "<rate>")
    .replace(/(ahead of|behind) this machine/g, "<skew> this machine")
    .trimEnd()

let mock: MockClinicalServer.Started
let dir = ""

beforeAll(async () => {
  mock = await MockClinicalServer.start()
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-session-"))
  const bin = Path.join(dir, "bin")
  Fs.mkdirSync(bin)
  Fs.writeFileSync(Path.join(bin, "effect-clinical"), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, {
    mode: 0o755
  })
})
afterAll(async () => {
  await mock.close()
  Fs.rmSync(dir, { recursive: true, force: true })
})

describe("README: the command-line session", () => {
  it("prints what the README shows, command by command", async () => {
    const env = {
      PATH: `${Path.join(dir, "bin")}:${process.env.PATH}`,
      NO_COLOR: "1",
      CLINICAL_BASE_URL: mock.url,
      CLINICAL_APPLICATION_ID: mock.applicationId
    }
    for (const { command, output } of session()) {
      // Asynchronously: the mock answers from this process, so its event loop must keep running.
      const printed = await new Promise<string>((resolve) =>
        execFile(
          "sh",
          ["-c", `exec 2>&1\n${command}`],
          { cwd: dir, env, encoding: "utf8" },
          (_error, stdout) => resolve(stdout)
        )
      )
      expect(shape(printed), `$ ${command}`).toBe(shape(output))
    }
  }, 120_000)
})
