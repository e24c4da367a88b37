/**
 * The README's command-line session is run as written: each `$ ` line of its ```console block is a
 * shell command, run in order in one directory with `effect-clinical` on the PATH (the built bin)
 * and `CLINICAL_*` pointing at the mock on loopback, and what follows it is what it must print
 * (stdout and stderr together). The parts that change from run to run (the port, times, durations,
 * rates) are compared by shape.
 */
import { afterAll, beforeAll, describe, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { binDirectory, runSession, session } from "../support/Session.js"

const root = Path.resolve(import.meta.dirname, "../..")

let mock: MockClinicalServer.Started
let dir = ""

beforeAll(async () => {
  mock = await MockClinicalServer.start()
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-session-"))
})
afterAll(async () => {
  await mock.close()
  Fs.rmSync(dir, { recursive: true, force: true })
})

describe("README: the command-line session", () => {
  it("prints what the README shows, command by command", async () => {
    const env = {
      PATH: `${binDirectory(dir)}:${process.env.PATH}`,
      NO_COLOR: "1",
      CLINICAL_BASE_URL: mock.url,
      CLINICAL_APPLICATION_ID: mock.applicationId
    }
    await runSession(session(Fs.readFileSync(Path.join(root, "README.md"), "utf8"), "README.md"), dir, env)
  }, 120_000)
})
