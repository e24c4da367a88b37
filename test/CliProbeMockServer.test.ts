/**
 * `effect-clinical probe` (each fact about the service, as the mock answers it) and
 * `effect-clinical mock-server` (serving the mock until interrupted, the other commands working
 * against it).
 */
import { describe, expect, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import { APP, ELEANOR, envOf, expectNoSecretIn, MARCUS, mock, setUpCli } from "./support/cliFixtures.js"
import * as Pki from "./support/Pki.js"

setUpCli()

describe("effect-clinical probe", { timeout: 60_000 }, () => {
  const probe = async (options: MockClinicalServer.Options, personUid?: string) => {
    const server = await MockClinicalServer.start(options)
    try {
      const ran = await Cli.run(["probe", "--json", ...(personUid === undefined ? [] : ["-"])], {
        env: envOf(server.url),
        input: personUid === undefined ? "" : `${personUid}\n`
      })
      expect(ran.code, ran.stderr).toBe(0)
      await expectNoSecretIn(ran, server)
      const counters = await server.counters()
      const report = JSON.parse(ran.stdout)
      expect(report.requests).toBe(counters.tokenRequests + counters.dataRequests)
      expect(report.requests).toBeLessThanOrEqual(7)
      return report
    } finally {
      await server.close()
    }
  }

  it("reports each fact as the mock answers it by default", async () => {
    const report = await probe({}, ELEANOR!.personUid)
    expect(report).toMatchObject({
      token: { expiresForm: "IMF-fixdate", lifetimeSeconds: 3600 },
      newTokenRevokesPrevious: false,
      unknownPerson: { status: 400, success: false, errorType: "PersonNotFound" },
      wrongMethod: { method: "GET", status: 405 },
      personuidBinds: true,
      medicationFields: {
        answer: { status: 200, success: true },
        body: ["Medications", "Success", "ErrorMessage", "ErrorType"],
        collection: "Medications",
        item: Object.keys(ELEANOR!.medications[0]!)
      }
    })
    expect(Math.abs(report.token.serverClockSkewMillis)).toBeLessThan(1500)
  })

  it("reports each fact as the mock answers it the other way", async () => {
    const report = await probe({
      tokenExpiresForm: "rfc850",
      tokenLifetime: "20 minutes",
      clockOffsetMillis: 120_000,
      revokeOnIssue: true,
      unknownPersonStatus: 200,
      wrongMethodStatus: 404,
      fieldNames: "exact"
    }, MARCUS!.personUid)
    expect(report).toMatchObject({
      token: { expiresForm: "RFC 850", lifetimeSeconds: 1200 },
      newTokenRevokesPrevious: true,
      unknownPerson: { status: 200, success: false, errorType: "PersonNotFound" },
      wrongMethod: { status: 404 },
      personuidBinds: false
    })
    expect(report.token.serverClockSkewMillis).toBeGreaterThan(118_000)
    expect(report.token.serverClockSkewMillis).toBeLessThan(122_000)
  })

  it("without a PersonUid: fewer facts and fewer requests, and it says why; the table form", async () => {
    const report = await probe({ tokenExpiresForm: "asctime" })
    expect(report).toMatchObject({ token: { expiresForm: "asctime" }, personuidBinds: null, medicationFields: null })
    expect(report.requests).toBe(4)
    expect(report.notes.join(" ")).toContain("give a PersonUid")
    const table = await Cli.run(["probe"], { env: envOf(mock.url) })
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/a new token revokes the previous one\s+no/)
    expect(table.stdout).toMatch(/requests made\s+4/)
  })
})

/**
 * Runs `mock-server` with `args`; once its stdout shows the whole banner (the URL it listens at,
 * through the command it suggests, each line whole: output comes in chunks), runs `meanwhile` with
 * the URL, then interrupts it (SIGINT). Resolves with the run and the URL ("" when it never listened).
 */
const whileMockServes = async (
  args: ReadonlyArray<string>,
  meanwhile: (url: string, stdout: string) => Promise<void>
): Promise<{ readonly ran: Cli.Ran; readonly url: string }> => {
  let url = ""
  const ran = await Cli.run(["mock-server", ...args], {
    started: (child, output) => {
      const poll = setInterval(async () => {
        const match = /listening at (https?:\/\/[\w.]+:\d+)\n/.exec(output.stdout)
        if (match === null || !/\nTry, in another terminal: [^]* medications \S+\n$/.test(output.stdout)) return
        clearInterval(poll)
        url = match[1]!
        await meanwhile(url, output.stdout)
        child.kill("SIGINT")
      }, 50)
      child.on("close", () => clearInterval(poll))
    }
  })
  return { ran, url }
}

describe("effect-clinical mock-server", { timeout: 60_000 }, () => {
  it("serves the mock until interrupted; the other commands work against it", async () => {
    let token: Cli.Ran | undefined
    let tried: { code: number; stdout: string } | undefined
    const { ran, url } = await whileMockServes(["--port", "0"], async (url, stdout) => {
      token = await Cli.run(["token", "--json"], { env: envOf(url) })
      // The command it suggests, as a user pastes it into a shell (here: the checkout, through npm).
      const suggested = /Try, in another terminal: ([^]*)$/.exec(stdout)?.[1] ?? "false"
      tried = await new Promise((resolve) =>
        execFile(
          "sh",
          ["-c", suggested],
          { cwd: Path.resolve(import.meta.dirname, "..") },
          (error, stdout) => resolve({ code: error === null ? 0 : (error.code as number), stdout })
        )
      )
    })
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(token?.code).toBe(0)
    expect(JSON.parse(token!.stdout).host).toBe(url)
    expect(ran.code).toBe(130)
    // What it prints to try it: the demo ApplicationId and the invented persons.
    expect(ran.stdout).toContain(`Demo ApplicationId (the mock's own, not a credential): ${APP}`)
    for (const person of MockClinicalServer.fixturePersons) {
      expect(ran.stdout).toContain(`${person.personUid}  ${person.passCode}  ${person.dateOfBirth}`)
    }
    expect(ran.stdout).toContain(`CLINICAL_BASE_URL=${url} \\\n  CLINICAL_APPLICATION_ID=${APP}`)
    expect(tried?.code).toBe(0)
    expect(tried?.stdout).toContain(`person #1: ${ELEANOR!.medications.length} items`)
  }, 60_000)

  it(
    "--tls-cert and --tls-key serve HTTPS: a client trusting the CA reads from it; a half or unreadable pair is a usage error",
    async () => {
      const pki = Pki.make()
      try {
        let token: Cli.Ran | undefined
        let untrusted: Cli.Ran | undefined
        const { ran, url } = await whileMockServes(
          ["--port", "0", "--tls-cert", pki.server.certFile, "--tls-key", pki.server.keyFile],
          async (url) => {
            token = await Cli.run(["token", "--json"], { env: { ...envOf(url), CLINICAL_CA_FILE: pki.ca.certFile } })
            untrusted = await Cli.run(["token", "--json"], { env: envOf(url) })
          }
        )
        expect(url).toMatch(/^https:\/\/localhost:\d+$/)
        expect(token?.code).toBe(0)
        expect(JSON.parse(token!.stdout).host).toBe(url)
        // Without the CA, the certificate is not trusted: a TransportError, exit 1.
        expect(untrusted?.code).toBe(1)
        expect(untrusted?.stderr).toMatch(/certificate/i)
        expect(ran.code).toBe(130)
        expect(ran.stdout).toContain(
          `CLINICAL_BASE_URL=${url} \\\n  CLINICAL_APPLICATION_ID=${APP} \\\n  CLINICAL_CA_FILE=`
        )
        const half = await Cli.run(["mock-server", "--tls-cert", pki.server.certFile])
        expect(half.code).toBe(2)
        expect(half.stderr).toContain("--tls-cert and --tls-key go together")
        const missing = await Cli.run(["mock-server", "--tls-cert", pki.server.certFile, "--tls-key", pki.dir])
        expect(missing.code).toBe(2)
        expect(missing.stderr).toContain("--tls-key names something that is not a file")
        // A key that is not the certificate's: refused when serving, the key's text never shown.
        const mismatched = await Cli.run(
          ["mock-server", "--tls-cert", pki.server.certFile, "--tls-key", pki.client.keyFile]
        )
        expect(mismatched.code).toBe(1)
        expect(mismatched.stderr).toContain("cannot serve HTTPS")
        expect(mismatched.stderr + mismatched.stdout).not.toContain("PRIVATE KEY")
      } finally {
        pki.remove()
      }
    },
    60_000
  )

  it(
    "--persons N serves N made-up persons, --persons-out lists their PersonUids (owner-only): a batch reads them all",
    async () => {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "mock-persons-"))
      try {
        const list = Path.join(dir, "persons.txt")
        const out = Path.join(dir, "results.ndjson")
        let batch: Cli.Ran | undefined
        const { ran } = await whileMockServes(
          ["--port", "0", "--persons", "1000", "--persons-out", list],
          async (url) => {
            batch = await Cli.run(["batch", "medications", "--persons-file", list, "--out", out], { env: envOf(url) })
          }
        )
        expect(ran.code).toBe(130)
        expect(ran.stdout).toContain(`... and 997 more (every PersonUid in ${list})`)
        const persons = MockClinicalServer.generatedPersons(1000)
        expect(Fs.readFileSync(list, "utf8")).toBe(persons.map((person) => person.personUid).join("\n") + "\n")
        expect(Fs.statSync(list).mode & 0o777).toBe(0o600)
        expect(batch?.code).toBe(0)
        const lines = Fs.readFileSync(out, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line))
        expect(lines).toHaveLength(1000)
        for (const line of lines) {
          expect(line.outcome).toBe("Success")
          expect(line.items).toHaveLength(persons[line.index]!.medications.length)
        }
        // A count out of range, or a list file that exists already, is a usage error.
        const tooMany = await Cli.run(["mock-server", "--persons", "100001"])
        expect(tooMany.code).toBe(2)
        expect(tooMany.stderr).toContain(
          "--persons: the count of made-up persons must be a whole number from 1 to 100000"
        )
        const again = await Cli.run(["mock-server", "--persons", "10", "--persons-out", list])
        expect(again.code).toBe(2)
        expect(again.stderr).toContain("--persons-out cannot be created (EEXIST): it must be a new file")
      } finally {
        Fs.rmSync(dir, { recursive: true, force: true })
      }
    },
    60_000
  )

  it("a port that is not one is a usage error: --port, or PORT", async () => {
    const flag = await Cli.run(["mock-server", "--port", "http"])
    expect(flag.code).toBe(2)
    const variable = await Cli.run(["mock-server"], { env: { PORT: "70000" } })
    expect(variable.code).toBe(2)
    expect(variable.stderr).toContain("the port must be an integer from 0 to 65535")
  })
})
