/**
 * effect-clinical/promise's logging: the library's lines going to the application's logger, at the
 * level asked for, without secrets; a logLevel or logger that is not one refused.
 */
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { clientFor, closeStartedAfterEach, rejection, startMock } from "./support/promiseFixtures.js"

closeStartedAfterEach()

describe("logging", () => {
  it("the library's lines go to the application's logger, at the level asked for, without secrets", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!
    const entries: Array<{ level: string; message: string; annotations: Readonly<Record<string, unknown>> }> = []
    const refused = clientFor(mock.url, "00000000-0000-4000-8000-000000000000", {
      logger: (entry: never) => entries.push(entry)
    })
    await rejection(refused.medications(person.personUid))
    expect(entries).toEqual([
      expect.objectContaining({
        level: "warn",
        message: "token refresh failed",
        annotations: expect.objectContaining({ error: "Unauthorized" })
      })
    ])
    entries.length = 0
    const debug = clientFor(mock.url, mock.applicationId, {
      logLevel: "debug",
      logger: (entry: never) => entries.push(entry)
    })
    await mock.injectFaults("medications", [MockClinicalServer.Fault.status(401)])
    await debug.medications(person.personUid)
    // Each at its own level: a debug line is delivered as "debug", not as "info" (issue 24's audit).
    expect(entries.map((entry) => [entry.level, entry.message])).toEqual([
      ["debug", "token issued"],
      ["debug", "token rejected; refreshing it and retrying once"],
      ["debug", "token issued"]
    ])
    expect(JSON.stringify(entries)).not.toContain(person.personUid)
    expect(JSON.stringify(entries)).not.toContain(mock.applicationId)
    entries.length = 0
    const silent = clientFor(mock.url, "00000000-0000-4000-8000-000000000000", {
      logLevel: "none",
      logger: (entry: never) => entries.push(entry)
    })
    await rejection(silent.medications(person.personUid))
    expect(entries).toEqual([])
  })

  /** Runs an ES module over the built package in a child process: its exit code and both outputs, as captured. */
  const runChild = (program: string, env: Record<string, string>) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ["--input-type=module", "-e", program], {
        env: { ...process.env, ...env },
        timeout: 20_000
      }, (_, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }))
    })

  it(
    "by default nothing is logged: a call retried and failed leaves stdout and stderr empty; logLevel alone logs to stderr (issue 23)",
    async () => {
      const mock = await startMock()
      const program = `
      import { createClinicalClient } from ${
        JSON.stringify(Path.resolve(import.meta.dirname, "../dist/src/promise.js"))
      }
      const outcomes = []
      // A call retried until it fails, and one whose ApplicationId is refused (a warning of the library's).
      for (const applicationId of [process.env.APPLICATION_ID, "00000000-0000-4000-8000-000000000000"]) {
        const clinical = createClinicalClient({
          baseUrl: process.env.URL,
          applicationId,
          retryBaseDelay: "1ms",
          ...(process.env.LEVEL === undefined ? {} : { logLevel: process.env.LEVEL })
        })
        outcomes.push(await clinical.medications(process.env.PERSON_UID).then(() => "resolved", (error) => error._tag))
        await clinical.close()
      }
      process.exitCode = outcomes.join() === "ServerError,Unauthorized" ? 0 : 1
    `
      const env = { URL: mock.url, APPLICATION_ID: mock.applicationId, PERSON_UID: mock.persons[0]!.personUid }
      const fourFailures = () =>
        mock.injectFaults("medications", Array.from({ length: 4 }, () => MockClinicalServer.Fault.status(500)))
      await fourFailures()
      const silent = await runChild(program, env)
      expect(silent).toEqual({ code: 0, stdout: "", stderr: "" })
      await fourFailures()
      const asked = await runChild(program, { ...env, LEVEL: "debug" })
      expect(asked.code).toBe(0)
      expect(asked.stdout).toBe("")
      // Every retry's line, on stderr, in logfmt.
      expect(asked.stderr.match(/^timestamp=\S+ level=DEBUG .*retry/gm)).toHaveLength(3)
      expect(asked.stderr).toMatch(/^timestamp=\S+ level=WARN .*message="token refresh failed"/m)
      expect(asked.stderr).not.toContain(mock.persons[0]!.personUid)
    },
    45_000
  )

  it("a logLevel or logger that is not one is InvalidConfig", () => {
    for (const [options, setting] of [[{ logLevel: "loud" }, "logLevel"], [{ logger: "console" }, "logger"]] as const) {
      expect(() =>
        createClinicalClient(
          { baseUrl: "https://x.org", applicationId: MockClinicalServer.demoApplicationId, ...options } as never
        )
      )
        .toThrow(expect.objectContaining({ _tag: "InvalidConfig", setting }))
    }
  })
})
