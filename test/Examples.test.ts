/**
 * Every example runs, as a user would run it (tsx, no credentials, no network), and prints what
 * the README says it prints.
 */
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile, spawn } from "node:child_process"
import { describe, expect, it } from "vitest"

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("CLINICAL_")))

const tsx = (...args: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile("node_modules/.bin/tsx", args, { env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    })
  })

describe.concurrent("examples", () => {
  it("medications.ts (npm start) reads every fixture person from the built-in mock", async () => {
    const run = await tsx("examples/medications.ts")
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/Connected to the built-in mock server at http:\/\/127\.0\.0\.1:\d+/)
    expect(run.stdout).toMatch(/Token obtained; it expires at \d{4}-\d{2}-\d{2}T.* \(in 60 minutes\)/)
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

  it("custom-transport.ts reads through FetchHttpClient", async () => {
    const run = await tsx("examples/custom-transport.ts")
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain("Priya Raman (fixture): 6 medications, fetched through FetchHttpClient")
  }, 60_000)

  it("testing-with-the-mock.ts passes its own tests", async () => {
    const run = await tsx("examples/testing-with-the-mock.ts")
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(run.stdout).toContain("# pass 5")
    expect(run.stdout).toContain("# fail 0")
  }, 60_000)

  it("quick-start.ts without settings fails with a ConfigError naming the variables", async () => {
    const run = await tsx("examples/quick-start.ts")
    expect(run.code).not.toBe(0)
    expect(run.stdout + run.stderr).toContain("Missing data at CLINICAL_BASE_URL")
  }, 60_000)

  it("mock-server.ts serves the mock and prints its URL, the demo ApplicationId and the fixture persons", async () => {
    const child = spawn("node_modules/.bin/tsx", ["examples/mock-server.ts", "--port", "0"], { env })
    let stdout = ""
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no banner within 50 s: ${stdout}`)), 50_000)
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString("utf8")
          if (stdout.includes("npm start")) {
            clearTimeout(timer)
            resolve()
          }
        })
      })
      const url = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1]
      expect(url).toBeDefined()
      expect(stdout).toContain(`Demo ApplicationId: ${MockClinicalServer.demoApplicationId}`)
      for (const person of MockClinicalServer.fixturePersons) expect(stdout).toContain(person.personUid)
      // It really serves: a token request answers.
      const response = await fetch(`${url}/api/Server/Token`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ ApplicationId: MockClinicalServer.demoApplicationId })
      })
      expect(response.status).toBe(200)
      expect(response.headers.get("token_expires")).toMatch(/GMT$/)
    } finally {
      child.kill()
    }
  }, 60_000)

  it("mock-server.ts refuses a bad port", async () => {
    const run = await tsx("examples/mock-server.ts", "--port", "http")
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("The port must be an integer")
  }, 60_000)
})
