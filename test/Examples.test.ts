/**
 * Every example runs, as a user would run it (tsx, no credentials, no network), and prints what
 * the README says it prints.
 */
import { Effect, Exit, Scope } from "effect"
import { MockClinicalServer } from "effect-clinical/testing"
import { type ChildProcessWithoutNullStreams, execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import { describe, expect, it } from "vitest"
import { spawnTsx } from "./support/tsxProgram.js"

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("CLINICAL_")))

const tsxWith = (extra: Record<string, string>, ...args: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile("node_modules/.bin/tsx", args, { env: { ...env, ...extra }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    })
  })

const tsx = (...args: ReadonlyArray<string>): Promise<Run> => tsxWith({}, ...args)

/** Serves a mock on loopback for the duration of `use`. */
const withServedMock = async <A>(use: (baseUrl: string) => Promise<A>): Promise<A> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const baseUrl = await Effect.runPromise(
      Effect.flatMap(MockClinicalServer.make(), (mock) => MockClinicalServer.serve(mock)).pipe(Scope.extend(scope))
    )
    return await use(baseUrl)
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

describe("examples", () => {
  it("every example is run by this suite", () => {
    // The queue's workers need a Redis: docs/distributed.md's test runs them.
    const suite = Fs.readFileSync(import.meta.filename, "utf8") +
      Fs.readFileSync("test/docs/Distributed.test.ts", "utf8")
    const examples = Fs.readdirSync("examples").filter((name) => name.endsWith(".ts"))
    expect(examples.length).toBeGreaterThan(5)
    for (const example of examples) expect(suite, `${example} is never run`).toContain(`"examples/${example}"`)
  })
})

// One example at a time: ten tsx processes at once on 2 cores, beside another test file, took
// over 60 s each in a full run (about 9 s alone).
describe("examples", () => {
  it("medications.ts (npm start) reads every fixture person from the built-in mock", async () => {
    const run = await tsx("examples/medications.ts")
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/Connecting to the built-in mock server at http:\/\/127\.0\.0\.1:\d+/)
    expect(run.stdout).toMatch(/Connected: token obtained; it expires at \d{4}-\d{2}-\d{2}T.* \(in 60 minutes\)/)
    expect(run.stdout).toContain("Eleanor Whitfield (fixture): 5 medication(s)")
    expect(run.stdout).toContain("Marcus Delgado (fixture): 2 medication(s)")
    expect(run.stdout).toContain("Priya Raman (fixture): 6 medication(s)")
    expect(run.stdout).toMatch(/Levothyroxine Sodium\s+75 mcg\s+Take 1 tablet by mouth every morning.*2016-09-12/)
    expect(run.stdout).toContain("Requests made: 1 token request(s), 3 data request(s)")
  }, 60_000)

  it("authenticate.ts authenticates a fixture person and reads their data, never printing a secret", async () => {
    const run = await tsx("examples/authenticate.ts")
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain("Authenticated; PersonUid obtained (printed redacted: <redacted>)")
    expect(run.stdout).toContain("5 medication(s): Lisinopril, Metformin Hydrochloride")
    expect(run.stdout).toContain("Ethnicities: Not Hispanic or Latino (2186-5)")
    expect(run.stdout).toMatch(
      /A wrong pass code: ApiError: authenticate request POST http:\/\/127\.0\.0\.1:\d+\/api\/Server\/Authenticate \(HTTP 400\) reported failure AuthenticationFailed/
    )
    const eleanor = MockClinicalServer.fixturePersons[0]!
    for (const secret of [eleanor.personUid, eleanor.passCode, "not-the-code", "1945"]) {
      expect(run.stdout + run.stderr).not.toContain(secret)
    }
  }, 60_000)

  it(
    "npm start with only some CLINICAL_* variables set names the missing one and does not fall back to the mock",
    async () => {
      const cases = [
        [
          { CLINICAL_BASE_URL: "https://openapitest.intelichart.com" },
          "CLINICAL_APPLICATION_ID and CLINICAL_PERSON_UIDS are not"
        ],
        [
          { CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId },
          "CLINICAL_BASE_URL and CLINICAL_PERSON_UIDS are not"
        ],
        [{ CLINICAL_PERSON_UIDS: "abc" }, "CLINICAL_BASE_URL and CLINICAL_APPLICATION_ID are not"],
        [
          { CLINICAL_TOKEN_PATH: "/api/server/token" },
          "CLINICAL_BASE_URL, CLINICAL_APPLICATION_ID and CLINICAL_PERSON_UIDS are not"
        ],
        // The service named but nobody to read: not a quiet success (issue 23).
        [
          {
            CLINICAL_BASE_URL: "https://openapitest.intelichart.com",
            CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId
          },
          "but CLINICAL_PERSON_UIDS is not"
        ],
        [{
          CLINICAL_BASE_URL: "https://x.org",
          CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId,
          CLINICAL_PERSON_UIDS: " , "
        }, "but CLINICAL_PERSON_UIDS is not"]
      ] as const
      // Side by side: each is a whole process start (tsx compiling), several seconds on a busy machine.
      const runs = await Promise.all(cases.map(([set]) => tsxWith(set, "examples/medications.ts")))
      for (const [i, [, missing]] of cases.entries()) {
        const run = runs[i]!
        expect(run.code).toBe(1)
        expect(run.stdout).toBe("")
        expect(run.stderr).toContain(missing)
        expect(run.stderr).toContain("unset every CLINICAL_* variable to use the built-in mock")
        expect(run.stderr).not.toContain(MockClinicalServer.demoApplicationId)
      }
    },
    120_000
  )

  it("npm start against a host that refuses connections never says Connected and exits 1", async () => {
    const run = await tsxWith({
      CLINICAL_BASE_URL: "http://127.0.0.1:9",
      CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId,
      CLINICAL_PERSON_UIDS: "someone",
      CLINICAL_MAX_RETRIES: "0"
    }, "examples/medications.ts")
    expect(run.code).toBe(1)
    expect(run.stdout).toContain("Connecting to http://127.0.0.1:9 (from CLINICAL_BASE_URL)")
    expect(run.stdout).not.toContain("Connected")
    expect(run.stderr).toContain("error: token request POST http://127.0.0.1:9/api/Server/Token failed (Network)")
  }, 60_000)

  it("npm start against a real service exits 1 when no person could be read, 0 when one could", async () => {
    await withServedMock(async (baseUrl) => {
      const settings = { CLINICAL_BASE_URL: baseUrl, CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId }
      const person = MockClinicalServer.fixturePersons[1]!
      // Side by side: each is a whole process start (tsx compiling), several seconds on a busy machine.
      const [none, one] = await Promise.all([
        tsxWith({ ...settings, CLINICAL_PERSON_UIDS: "nobody-1,nobody-2" }, "examples/medications.ts"),
        tsxWith({ ...settings, CLINICAL_PERSON_UIDS: `nobody,${person.personUid}` }, "examples/medications.ts")
      ])
      expect(none.code).toBe(1)
      expect(none.stdout).toContain("Connected: token obtained")
      expect(none.stdout).toContain("person 1 of CLINICAL_PERSON_UIDS: not read (ApiError")
      expect(none.stderr).toContain("error: none of the 2 person(s) could be read")
      expect(one.code, one.stderr).toBe(0)
      expect(one.stdout).toContain("person 2 of CLINICAL_PERSON_UIDS: 2 medication(s)")
      expect(one.stdout + one.stderr).not.toContain(person.personUid)
    })
  }, 120_000)

  it("http-backend.ts serves medications through the Promise API, and exits by itself on SIGTERM", async () => {
    const child = spawnTsx("examples/http-backend.ts", { env })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    try {
      while (!/listening at http:\/\/127\.0\.0\.1:\d+/.test(stdout)) {
        if (child.exitCode !== null) throw new Error(stderr)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const url = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)![1]!
      const found = await fetch(`${url}/patients/2/medications`)
      expect(found.status).toBe(200)
      expect(await found.json()).toEqual([
        { name: "Levothyroxine Sodium", strength: "75 mcg", instructions: expect.stringContaining("every morning") },
        { name: "Omeprazole", strength: "20 mg", instructions: expect.stringContaining("before breakfast") }
      ])
      expect((await fetch(`${url}/patients/9/medications`)).status).toBe(404)
    } finally {
      child.kill("SIGTERM")
    }
    const stoppedAt = Date.now()
    expect(await exited).toBe(0)
    expect(Date.now() - stoppedAt).toBeLessThan(10_000)
    expect(stdout).toContain("stopped")
    expect(stdout + stderr).not.toContain(MockClinicalServer.fixturePersons[1]!.personUid)
  }, 60_000)

  it(
    "observability.ts exports spans and metrics through @effect/opentelemetry and routes logs to its own logger",
    async () => {
      const run = await tsx("examples/observability.ts")
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toContain("read 5 medications")
      // Spans, as the console exporter prints them: the call (internal, with its retry), one CLIENT
      // span per HTTP attempt (kind 2), and the token refresh.
      expect(run.stdout).toMatch(/name: 'PersonData\.medications',\s+id: '\w+',\s+kind: 0/)
      expect(run.stdout).toMatch(/name: 'POST',\s+id: '\w+',\s+kind: 2/)
      expect(run.stdout).toContain("'http.request.resend_count': 1")
      expect(run.stdout).toContain("'clinical.attempts': 2")
      expect(run.stdout).toContain("name: 'TokenService.refresh'")
      for (const metric of ["clinical_call_attempts", "clinical_retries_total", "clinical_token_requests_total"]) {
        expect(run.stdout).toContain(`name: '${metric}'`)
      }
      // Every log line went to the application's logger, none to the console's pretty one.
      const lines = run.stderr.trim().split("\n").filter((line) => line.startsWith("{"))
      expect(lines.map((line) => JSON.parse(line).message)).toEqual(["token issued", "retrying"])
      expect(JSON.parse(lines[1]!)).toMatchObject({ level: "DEBUG", cause: "503", retry: 1 })
      expect(run.stdout).not.toMatch(/DEBUG \(#\d+\)/)
      const person = MockClinicalServer.fixturePersons[0]!
      expect(run.stdout + run.stderr).not.toContain(person.personUid)
      expect(run.stdout + run.stderr).not.toContain(MockClinicalServer.demoApplicationId)
    },
    60_000
  )

  it("custom-transport.ts reads through FetchHttpClient", async () => {
    const run = await tsx("examples/custom-transport.ts")
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain("Priya Raman (fixture): 6 medications, fetched through FetchHttpClient")
  }, 60_000)

  it("testing-with-the-mock.ts passes its own tests", async () => {
    // TAP named: node:test's default reporter is TAP on Node 20 and the spec reporter on Node 24.
    const run = await tsx("--test-reporter=tap", "examples/testing-with-the-mock.ts")
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(run.stdout).toContain("# pass 5")
    expect(run.stdout).toContain("# fail 0")
  }, 60_000)

  it(
    "quick-start.ts without settings says which variable is not set, on one line, without a stack trace",
    async () => {
      const run = await tsx("examples/quick-start.ts")
      expect(run.code).toBe(1)
      expect(run.stderr).toBe(
        "error: InvalidConfig: invalid settings: CLINICAL_BASE_URL is not set; CLINICAL_APPLICATION_ID is not set\n"
      )
    },
    60_000
  )
})

/** Sends SIGTERM once the program says it is busy; its exit code and output. */
const stopWhileBusy = (child: ChildProcessWithoutNullStreams) =>
  new Promise<{ code: number | null; stdout: string }>((resolve) => {
    let stdout = ""
    child.stdout.on("data", (chunk: Buffer) => {
      const wasBusy = stdout.includes("busy")
      stdout += chunk.toString("utf8")
      if (!wasBusy && stdout.includes("busy")) child.kill("SIGTERM")
    })
    child.on("close", (code) => resolve({ code, stdout }))
  })

// Why the docs run a worker with `node --import tsx` (and these tests the examples that stop on a
// signal): under load the `tsx` command SIGKILLed examples/queue-worker.ts mid-shutdown (exit 143).
describe("a program busy for 300 ms when SIGTERM comes", () => {
  const program = "test/support/programs/busyOnSignal.ts"

  it("run with node --import tsx, is ended by its own handler (exit 0)", async () => {
    const ran = await stopWhileBusy(spawnTsx(program))
    expect(ran).toEqual({ code: 0, stdout: "busy\nstopped by its own handler\n" })
  }, 30_000)

  it("run with the tsx command, is killed before its handler runs (exit 143)", async () => {
    const ran = await stopWhileBusy(spawn("node_modules/.bin/tsx", [program]))
    expect(ran).toEqual({ code: 143, stdout: "busy\n" })
  }, 30_000)
})
