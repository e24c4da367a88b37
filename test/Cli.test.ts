/**
 * The `effect-clinical` executable, run as a user runs it (the built bin, a child process) against
 * the mock served on loopback: what it prints on stdout and stderr, its exit code, the files it
 * writes, and that no secret appears in any of them (the `--reveal` token and the PersonUid that
 * `authenticate` exists to print aside).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import { expectNone } from "./support/Leaks.js"
import * as Pki from "./support/Pki.js"

const [ELEANOR, MARCUS, PRIYA] = MockClinicalServer.fixturePersons
const APP = MockClinicalServer.demoApplicationId
const UIDS = [ELEANOR!.personUid, MARCUS!.personUid, PRIYA!.personUid]

let mock: MockClinicalServer.Started
let dir = ""
beforeAll(async () => ({ dir, mock } = await Cli.setUp("effect-clinical-cli-")))
afterAll(() => Cli.tearDown({ dir, mock }))

const envOf = Cli.settingsFor

/** Every secret the mock saw or handed out: the ApplicationId, every token, every PersonUid, the pass codes and birth dates. */
const secretsOf = async (server: MockClinicalServer.Started = mock) => {
  const tokens = (await server.requestLog()).flatMap((request) => {
    const authorization = Object.entries(request.headers).find(([name]) => name.toLowerCase() === "authorization")
    return authorization === undefined ? [] : [authorization[1].replace(/^Bearer /, "")]
  })
  return [
    ...new Set([
      APP,
      ...tokens,
      ...server.persons.flatMap((person) => [person.personUid, person.passCode, person.dateOfBirth])
    ])
  ]
}

const expectNoSecretIn = async (ran: Cli.Ran, server?: MockClinicalServer.Started) => {
  const secrets = await secretsOf(server)
  expectNone("stdout", ran.stdout, secrets)
  expectNone("stderr", ran.stderr, secrets)
}

const file = (name: string, text: string) => {
  const path = Path.join(dir, name)
  Fs.writeFileSync(path, text)
  return path
}

describe("effect-clinical --help", { timeout: 60_000 }, () => {
  it("documents every command, each with an example, and the exit codes", async () => {
    const root = await Cli.run(["--help"])
    expect(root.code).toBe(0)
    expect(root.stdout).toContain("130 interrupted")
    const commands = [
      "token",
      "authenticate",
      "medications",
      "ethnicities",
      "detailed-ethnicities",
      "unique-device-identifiers",
      "batch",
      "probe",
      "mock-server"
    ]
    const helps = await Promise.all(commands.map((command) => Cli.run([command, "--help"])))
    const docs = Fs.readFileSync(Path.resolve(import.meta.dirname, "../docs/cli.md"), "utf8")
    helps.forEach((help, i) => {
      const command = commands[i]!
      expect(help.code, command).toBe(0)
      expect(help.stdout, command).toContain("Example: ")
      expect(help.stdout, command).toContain(`effect-clinical ${command}`)
      // docs/cli.md documents every option the command takes.
      // The usage line and its continuation lines, up to the blank line after them.
      const usage = help.stdout.slice(help.stdout.indexOf("\n$ ")).split("\n\n")[0]!
      for (const option of usage.match(/--[a-z-]+/g) ?? []) {
        expect(docs, `${command} ${option}`).toContain(`\`${option}`)
      }
    })
  }, 60_000)

  it("piped: no ANSI codes, every line within 100 columns, each usage line starts with effect-clinical (issue 23)", async () => {
    const commands = ["token", "authenticate", "medications", "detailed-ethnicities", "batch", "probe", "mock-server"]
    // NO_COLOR unset: a pipe alone means no colour.
    const helps = await Promise.all(
      [[], ["--help"], ...commands.map((command) => [command, "--help"])].map((args) =>
        Cli.run(args, { env: { NO_COLOR: "" } })
      )
    )
    helps.forEach((help, i) => {
      expect(help.code).toBe(0)
      expect(help.stdout).not.toContain("\u001b")
      for (const line of help.stdout.split("\n")) expect(line.length, line).toBeLessThanOrEqual(100)
      const usage = help.stdout.split("\n").find((line) => line.startsWith("$ "))
      expect(usage).toMatch(i < 2 ? /^\$ effect-clinical$/ : new RegExp(`^\\$ effect-clinical ${commands[i - 2]}( |$)`))
    })
  })

  it("at a terminal: colour, unless NO_COLOR is set (issue 23)", async () => {
    const atTerminal = (env: Record<string, string>) =>
      new Promise<string>((resolve) => {
        const child = spawn("script", ["-qec", `"${process.execPath}" "${Cli.BIN}" --help`, "/dev/null"], {
          env: { PATH: process.env.PATH ?? "", TERM: "xterm", ...env }
        })
        let screen = ""
        child.stdout.on("data", (chunk: Buffer) => screen += chunk.toString("utf8"))
        child.on("close", () => resolve(screen))
      })
    const [coloured, plain] = await Promise.all([atTerminal({}), atTerminal({ NO_COLOR: "1" })])
    expect(coloured).toContain("\u001b[")
    expect(plain).toContain("COMMANDS")
    expect(plain).not.toContain("\u001b")
  })

  it("a usage error exits 2: an unknown command, an unknown option, an unknown batch operation", async () => {
    expect((await Cli.run(["nonsense"])).code).toBe(2)
    expect((await Cli.run(["token", "--applicationid", APP], { env: envOf(mock.url) })).code).toBe(2)
    const batch = await Cli.run([
      "batch",
      "allergies",
      "--persons-file",
      file("p0.txt", "x\n"),
      "--out",
      Path.join(dir, "o0")
    ], {
      env: envOf(mock.url)
    })
    expect(batch.code).toBe(2)
    expect(batch.stderr).toContain(`unknown operation "allergies"`)
  })

  it("a secret typed where it does not belong is never echoed back in the usage error", async () => {
    const mistakes = [
      ["token", `--application-id=${APP}`],
      ["token", `--reveal=${APP}`],
      ["authenticate", ELEANOR!.passCode, ELEANOR!.dateOfBirth],
      ["probe", ELEANOR!.personUid, MARCUS!.personUid],
      ["medications", "--persons-file", ELEANOR!.personUid],
      ["batch", "medications", ELEANOR!.personUid, "--persons-file", "x", "--out", "y"],
      // A value holding a quote or a line break, which pairs the usage error's quotes otherwise (from review).
      ["medications", "--persons-file", `/nope/a'${ELEANOR!.personUid}`],
      ["batch", "medications", "--concurrency", `1'${APP}`, "--persons-file", "x", "--out", "y"],
      ["medications", "--persons-file", `/nope/a\n${APP}'x`]
    ]
    const runs = await Promise.all(mistakes.map((args) => Cli.run(args, { env: envOf(mock.url) })))
    runs.forEach((ran, i) => {
      expect(ran.code, mistakes[i]!.join(" ")).toBe(2)
      expectNone(`${mistakes[i]![0]} stderr`, ran.stderr, [
        APP,
        ELEANOR!.personUid,
        ELEANOR!.passCode,
        ELEANOR!.dateOfBirth
      ])
      expectNone(`${mistakes[i]![0]} stdout`, ran.stdout, [
        APP,
        ELEANOR!.personUid,
        ELEANOR!.passCode,
        ELEANOR!.dateOfBirth
      ])
    })
  })
})

describe("effect-clinical token", { timeout: 60_000 }, () => {
  it("prints the token's metadata, never the token; --reveal prints the token the service issued", async () => {
    const ran = await Cli.run(["token"], { env: envOf(mock.url) })
    expect(ran.code).toBe(0)
    expect(ran.stdout).toContain(`host          ${mock.url}`)
    expect(ran.stdout).toMatch(/lifetime\s+1 h 0 min/)
    expect(ran.stdout).toMatch(/expires\s+\d{4}-\d{2}-\d{2}T/)
    expect(ran.stdout).toMatch(/server clock\s+[+-]/)
    await expectNoSecretIn(ran)

    const revealed = await Cli.run(["token", "--json", "--reveal"], { env: envOf(mock.url) })
    expect(revealed.code).toBe(0)
    const json = JSON.parse(revealed.stdout)
    expect(json).toMatchObject({ host: mock.url, lifetimeSeconds: 3600, generation: 1 })
    // The token printed is one the mock accepts.
    const answer = await fetch(`${mock.url}${MockClinicalServer.paths.medications}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${json.token}`, ApplicationId: APP },
      body: JSON.stringify({ PersonUid: ELEANOR!.personUid })
    })
    expect(answer.status).toBe(200)
  })

  it("a refused ApplicationId exits 4 and says which host refused it and what to check", async () => {
    const ran = await Cli.run(["token"], { env: envOf(mock.url, "0f8fad5b-d9cb-469f-a165-70867728950e") })
    expect(ran.code).toBe(4)
    expect(ran.stdout).toBe("")
    expect(ran.stderr).toContain("the token host refused the ApplicationId")
    expectNone("stderr", ran.stderr, ["0f8fad5b-d9cb-469f-a165-70867728950e"])
  })

  it("CLINICAL_STACK=1 prints the cause's stack with the lines of src/, through the bundle's source maps", async () => {
    const env = envOf("http://127.0.0.1:1", APP)
    const plain = await Cli.run(["token"], { env })
    expect(plain.code).toBe(1)
    expect(plain.stderr).not.toMatch(/\n\s+at /)
    const stacked = await Cli.run(["token"], { env: { ...env, CLINICAL_STACK: "1" } })
    expect(stacked.code).toBe(1)
    expect(stacked.stderr).toContain("TransportError")
    expect(stacked.stderr).toMatch(/\n\s+at .*src\/internal\/call\/attempt\.ts:\d+:\d+/)
    expect(stacked.stderr).not.toMatch(/dist\/bin\/chunks/)
    expectNone("stderr", stacked.stderr, [APP])
  })

  it("a refused ApplicationId is said once, on one line: no log line unless --log-level asks (issue 23)", async () => {
    const env = envOf(mock.url, "0f8fad5b-d9cb-469f-a165-70867728950e")
    for (const args of [["token"], ["medications", UIDS[0]!], ["medications", "--json", UIDS[0]!]]) {
      const ran = await Cli.run(args, { env })
      expect(ran.code, args.join(" ")).toBe(4)
      const lines = ran.stderr.split("\n").filter((line) => line !== "")
      expect(lines, args.join(" ")).toEqual([
        expect.stringMatching(/^error: .*the token host refused the ApplicationId/)
      ])
      // The table says nothing of it; --json still carries the person's error, as data.
      if (args[1] === "--json") expect(JSON.parse(ran.stdout)[0].error._tag).toBe("Unauthorized")
      else expect(ran.stdout, args.join(" ")).toBe("")
    }
    const logged = await Cli.run(["token", "--log-level", "warning"], { env })
    expect(logged.stderr).toMatch(/^timestamp=\S+ level=WARN .*message="token refresh failed"/m)
    expect(logged.stderr.match(/^error: /gm)).toHaveLength(1)
  })

  it("a variable a few letters from a setting, in the environment or the settings file, is a warning naming it (issue 23)", async () => {
    const typo = await Cli.run(["token"], { env: { CLINICAL_BASEURL: mock.url, CLINICAL_APPLICATION_ID: APP } })
    expect(typo.code).toBe(2)
    expect(typo.stderr).toBe(
      "warning: CLINICAL_BASEURL is not a setting of effect-clinical and is ignored: did you mean CLINICAL_BASE_URL?\n" +
        "error: invalid setting CLINICAL_BASE_URL: is not set\n"
    )
    const settings = file("typo.env", "CLINICAL_REQUEST_TIMOUT=5s\n")
    const fromFile = await Cli.run(["token", "--settings-file", settings], { env: envOf(mock.url) })
    expect(fromFile.code).toBe(0)
    expect(fromFile.stderr).toBe(
      "warning: CLINICAL_REQUEST_TIMOUT is not a setting of effect-clinical and is ignored: did you mean " +
        "CLINICAL_REQUEST_TIMEOUT?\n"
    )
  })

  it("a missing setting exits 2 and names it; --settings-file fills in what the environment does not set", async () => {
    const missing = await Cli.run(["token"], { env: { CLINICAL_BASE_URL: mock.url } })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("CLINICAL_APPLICATION_ID")
    expect(missing.stderr).toContain("is not set")

    // A file that is not there: our own one line, with its path (issue 23: @effect/cli's hid it, without "error:").
    const absent = await Cli.run(["token", "--settings-file", "absent.env"], { env: envOf(mock.url) })
    expect(absent.code).toBe(2)
    expect(absent.stderr).toBe("error: cannot read --settings-file absent.env: ENOENT\n")

    const envFile = file(".env", `CLINICAL_APPLICATION_ID=${APP}\nCLINICAL_BASE_URL=http://127.0.0.1:9\n`)
    const fromFile = await Cli.run(["token", "--settings-file", envFile], { env: { CLINICAL_BASE_URL: mock.url } })
    expect(fromFile.code).toBe(0)
    expect(fromFile.stdout).toContain(mock.url)
    await expectNoSecretIn(fromFile)
  })
})

describe("effect-clinical authenticate", { timeout: 60_000 }, () => {
  it("reads the pass code and date of birth from standard input and prints the PersonUid alone", async () => {
    const ran = await Cli.run(["authenticate"], {
      env: envOf(mock.url),
      input: `${ELEANOR!.passCode}\n${ELEANOR!.dateOfBirth}\n`
    })
    expect(ran.code).toBe(0)
    expect(ran.stdout).toBe(`${ELEANOR!.personUid}\n`)
    expectNone("stderr", ran.stderr, await secretsOf())
    const log = await mock.requestLog()
    expect(JSON.parse(log.at(-1)!.body!)).toMatchObject({
      PassCode: ELEANOR!.passCode,
      DateOfBirth: ELEANOR!.dateOfBirth
    })
  })

  it("at a terminal, asks for both with the typing masked, and prints the PersonUid", async () => {
    // `script` gives the command a pseudo-terminal; what it shows there is captured.
    const child = spawn("script", ["-qec", `"${process.execPath}" "${Cli.BIN}" authenticate`, "/dev/null"], {
      env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...envOf(mock.url) }
    })
    let screen = ""
    const typed: Array<string> = []
    child.stdout.on("data", (chunk: Buffer) => {
      screen += chunk.toString("utf8")
      if (typed.length === 0 && screen.includes("Pass code")) typed.push(`${ELEANOR!.passCode}\r`)
      else if (typed.length === 1 && screen.includes("Date of birth")) typed.push(`${ELEANOR!.dateOfBirth}\r`)
      else return
      child.stdin.write(typed.at(-1))
    })
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve))
    expect(code).toBe(0)
    expect(typed).toHaveLength(2)
    expect(screen).toContain(ELEANOR!.personUid)
    expectNone("the terminal", screen, [ELEANOR!.passCode, ELEANOR!.dateOfBirth, APP])
  })

  it("a wrong date of birth is the service's error, exit 1; too little input is a usage error", async () => {
    const wrong = await Cli.run(["authenticate"], { env: envOf(mock.url), input: `${ELEANOR!.passCode}\n01/01/1950\n` })
    expect(wrong.code).toBe(1)
    expect(wrong.stdout).toBe("")
    expect(wrong.stderr).toContain("AuthenticationFailed")
    await expectNoSecretIn(wrong)
    expectNone("stderr", wrong.stderr, ["01/01/1950"])

    const short = await Cli.run(["authenticate"], { env: envOf(mock.url), input: `${ELEANOR!.passCode}\n` })
    expect(short.code).toBe(2)
    expect(short.stderr).toContain("two lines")
    await expectNoSecretIn(short)

    // Refused before sending (the library's InvalidRequest): a usage error, exit 2 (issue 24's audit).
    const before = (await mock.counters()).authenticateRequests
    const refused = await Cli.run(["authenticate"], {
      env: envOf(mock.url),
      input: `${ELEANOR!.passCode}\n31/31/1970\n`
    })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(/^error: authenticate request refused before sending: dateOfBirth /)
    expectNone("stderr", refused.stderr, ["31/31/1970", ELEANOR!.passCode])
    expect((await mock.counters()).authenticateRequests).toBe(before)
  })
})

describe("effect-clinical medications (and every person-data operation)", { timeout: 60_000 }, () => {
  it("a table per person, named by position, never by PersonUid", async () => {
    const ran = await Cli.run(["medications", ELEANOR!.personUid, MARCUS!.personUid], { env: envOf(mock.url) })
    expect(ran.code).toBe(0)
    expect(ran.stdout).toContain(`person #1: ${ELEANOR!.medications.length} items`)
    expect(ran.stdout).toContain(`person #2: ${MARCUS!.medications.length} items`)
    for (const medication of ELEANOR!.medications) expect(ran.stdout).toContain(medication.Name)
    expect(ran.stderr).toBe("")
    await expectNoSecretIn(ran)
  })

  it("--json in input order, --ndjson one line per person; - reads standard input, --persons-file a file", async () => {
    const json = await Cli.run(["medications", "--json", "-", PRIYA!.personUid], {
      env: envOf(mock.url),
      input: `# comment\n${ELEANOR!.personUid}\n\n${MARCUS!.personUid}\n`
    })
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual([
      { person: 1, items: ELEANOR!.medications },
      { person: 2, items: MARCUS!.medications },
      { person: 3, items: PRIYA!.medications }
    ])
    await expectNoSecretIn(json)

    const persons = file("persons.txt", UIDS.join("\n"))
    const ndjson = await Cli.run(["ethnicities", "--ndjson", "--persons-file", persons], { env: envOf(mock.url) })
    expect(ndjson.code).toBe(0)
    const lines = ndjson.stdout.trim().split("\n").map((line) => JSON.parse(line))
    expect(lines.map((line) => line.person).sort()).toEqual([1, 2, 3])
    expect(lines.find((line) => line.person === 1).items).toEqual(ELEANOR!.ethnicities)
    await expectNoSecretIn(ndjson)

    for (const operation of ["detailed-ethnicities", "unique-device-identifiers"]) {
      const ran = await Cli.run([operation, "--json", PRIYA!.personUid], { env: envOf(mock.url) })
      expect(ran.code, operation).toBe(0)
      expect(Array.isArray(JSON.parse(ran.stdout)[0].items), operation).toBe(true)
    }
  })

  it("an unknown person fails alone: the others print, the error is shown by position, exit 1", async () => {
    const ran = await Cli.run(["medications", "--json", ELEANOR!.personUid, "no-such-person"], { env: envOf(mock.url) })
    expect(ran.code).toBe(1)
    const [first, second] = JSON.parse(ran.stdout)
    expect(first.items).toEqual(ELEANOR!.medications)
    expect(second.error).toMatchObject({ _tag: "ApiError", errorType: "PersonNotFound" })
    expect(ran.stderr).toContain("1 of 2 persons failed")
    await expectNoSecretIn(ran)
    expectNone("output", ran.stdout + ran.stderr, ["no-such-person"])
  })

  // One test per command (each starts the CLI twice): 14 starts in one test passed 60 s on a busy machine.
  describe("a bad --start-date is one usage error before the settings are read or anything is sent (issue 23)", () => {
    const bad = ["--start-date", "2024-13-01"]
    const commands: ReadonlyArray<readonly [string, () => Array<string>]> = [
      ["medications", () => ["medications", UIDS[0]!, UIDS[1]!, ...bad]],
      ["ethnicities", () => ["ethnicities", "--json", "--persons-file", datesFile(), ...bad]],
      ["detailed-ethnicities", () => ["detailed-ethnicities", "--ndjson", ...bad, "-"]],
      ["unique-device-identifiers", () => ["unique-device-identifiers", ...bad, UIDS[0]!]],
      [
        "batch",
        () => ["batch", "medications", "--persons-file", datesFile(), "--out", Path.join(dir, "dates.ndjson"), ...bad]
      ]
    ]
    const datesFile = () => file("dates.txt", `${UIDS[0]}\n${UIDS[1]}\n`)

    it.each(commands)("%s, with and without settings", async (_, command) => {
      const before = await mock.counters()
      for (const env of [{}, envOf(mock.url)]) {
        const ran = await Cli.run(command(), { env, input: `${UIDS[0]}\n` })
        expect(ran.code).toBe(2)
        expect(ran.stdout).toBe("")
        expect(ran.stderr).toMatch(/^error: --start-date is not a real calendar date\n$/)
      }
      expect(await mock.counters()).toEqual(before)
      expect(Fs.existsSync(Path.join(dir, "dates.ndjson"))).toBe(false)
    })

    it("reversed dates, and dates after -, with and without settings", async () => {
      const before = await mock.counters()
      for (const env of [{}, envOf(mock.url)]) {
        const reversed = await Cli.run(
          ["medications", UIDS[0]!, "--start-date", "2022-01-01", "--end-date", "2021-01-01"],
          { env }
        )
        expect(reversed.stderr).toBe("error: --start-date is after --end-date\n")
        // After a -, @effect/cli reads no option: said so, rather than sending "--start-date" as a PersonUid.
        const after = await Cli.run(["medications", "-", ...bad], { env, input: `${UIDS[0]}\n` })
        expect(after.code).toBe(2)
        expect(after.stderr).toBe(
          "error: --start-date after - is not read as an option: put the options before the PersonUids\n"
        )
      }
      expect(await mock.counters()).toEqual(before)
    })
  })

  it("no PersonUid at all is a usage error", async () => {
    const ran = await Cli.run(["medications"], { env: envOf(mock.url) })
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain("no PersonUid given")
  })
})

describe("effect-clinical batch", { timeout: 60_000 }, () => {
  const personsFile = (name: string, count: number, extra: ReadonlyArray<string> = []) =>
    file(name, ["# persons", ...Array.from({ length: count }, (_, i) => UIDS[i % 3]!), ...extra].join("\n") + "\n")

  const readResults = (path: string) =>
    Fs.readFileSync(path, "utf8").trim().split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))

  it("writes one line per person, owner-only, by input position; no PersonUid in any file or stream", async () => {
    const persons = personsFile("batch1.txt", 300, ["no-such-person"])
    const out = Path.join(dir, "batch1.ndjson")
    const ran = await Cli.run(["batch", "medications", "--persons-file", persons, "--out", out], {
      env: envOf(mock.url)
    })
    expect(ran.code).toBe(3)
    expect(ran.stdout).toBe("")
    expect(ran.stderr).toContain("301 persons: 300 succeeded, 1 failed, 0 skipped")
    expect(ran.stderr).toContain("1 ApiError PersonNotFound")
    const results = readResults(out)
    expect(results.map((line) => line.index).sort((a, b) => a - b)).toEqual(Array.from({ length: 301 }, (_, i) => i))
    expect(results.find((line) => line.index === 4).items).toEqual(MARCUS!.medications)
    expect(results.find((line) => line.index === 300)).toMatchObject({
      outcome: "Failure",
      error: { _tag: "ApiError" }
    })
    expect(Fs.statSync(out).mode & 0o777).toBe(0o600)
    expect(Fs.statSync(`${out}.checkpoint.json`).mode & 0o777).toBe(0o600)
    const secrets = [...(await secretsOf()), "no-such-person"]
    expectNone("results", Fs.readFileSync(out, "utf8"), secrets)
    expectNone("checkpoint", Fs.readFileSync(`${out}.checkpoint.json`, "utf8"), secrets)
    expectNone("stderr", ran.stderr, secrets)

    const again = await Cli.run(["batch", "medications", "--persons-file", persons, "--out", out], {
      env: envOf(mock.url)
    })
    expect(again.code).toBe(2)
    expect(again.stderr).toContain("--resume")
  })

  it("interrupted halfway and resumed: every person exactly once", async () => {
    const slow = await MockClinicalServer.start()
    try {
      await slow.injectFaults("medications", Array.from({ length: 400 }, () => MockClinicalServer.Fault.delay(10)))
      const persons = personsFile("batch2.txt", 400)
      const out = Path.join(dir, "batch2.ndjson")
      const args = ["batch", "medications", "--persons-file", persons, "--out", out, "--concurrency", "4"]
      const interrupted = await Cli.run([...args, "--progress-every", "0.1"], {
        env: envOf(slow.url),
        started: (child) => {
          const poll = setInterval(() => {
            if (Fs.existsSync(out) && Fs.statSync(out).size > 20_000) {
              clearInterval(poll)
              child.kill("SIGINT")
            }
          }, 20)
          child.on("close", () => clearInterval(poll))
        }
      })
      expect(interrupted.code).toBe(130)
      expect(interrupted.stderr).toContain("--resume")
      // Not a terminal: plain progress lines, as often as asked.
      expect(interrupted.stderr).toMatch(
        /^\d+\/400 done: \d+ succeeded, 0 failed, 0 skipped \(\d+\.\d\/s, (\d+ ms|\d+\.\d s) elapsed, about (\d+ ms|\d+\.\d s|\d+ min \d+ s) left\)$/m
      )
      const before = readResults(out).length
      expect(before).toBeGreaterThan(0)
      expect(before).toBeLessThan(400)
      // What it says it wrote is what the file holds (a write under way when interrupted was not counted).
      expect(interrupted.stderr).toContain(`interrupted: ${before} of 400 persons are in`)

      await slow.resetCounters()
      const resumed = await Cli.run([...args, "--resume", "--progress-every", "0.1"], { env: envOf(slow.url) })
      expect(resumed.code).toBe(0)
      // Progress counts every run alike: what is done is what succeeded, failed or was skipped.
      const progress = [...resumed.stderr.matchAll(/^(\d+)\/400 done: (\d+) succeeded, (\d+) failed, (\d+) skipped/gm)]
      expect(progress.length).toBeGreaterThan(0)
      for (const [line, done, succeeded, failed, skipped] of progress) {
        expect(Number(succeeded) + Number(failed) + Number(skipped), line).toBe(Number(done))
      }
      expect(resumed.stderr).toContain(
        `400 persons: 400 succeeded, 0 failed, 0 skipped (${before} done in earlier runs)`
      )
      const indices = readResults(out).map((line) => line.index).sort((a, b) => a - b)
      expect(indices).toEqual(Array.from({ length: 400 }, (_, i) => i))
      // Exactly the persons not done before were sent again.
      expect((await slow.counters()).medicationRequests).toBe(400 - before)
      await expectNoSecretIn(resumed, slow)
    } finally {
      await slow.close()
    }
  }, 60_000)

  it("a line cut by a crash is dropped on resume and its person sent again; another input is refused", async () => {
    const persons = personsFile("batch3.txt", 10)
    const out = Path.join(dir, "batch3.ndjson")
    const args = ["batch", "ethnicities", "--persons-file", persons, "--out", out]
    expect((await Cli.run(args, { env: envOf(mock.url) })).code).toBe(0)
    const lines = Fs.readFileSync(out, "utf8").split("\n").filter((line) => line !== "")
    const kept = lines.filter((line) => JSON.parse(line).index !== 7)
    const seventh = lines.find((line) => JSON.parse(line).index === 7)!
    // Cut anywhere: in its position, just after its outcome (it reads as a done person's start),
    // one character short of whole (issue 24's audit: kept, it left a line that is not JSON).
    const outcomeEnd = seventh.indexOf("\"Success\"") + "\"Success\"".length
    for (const cut of [12, outcomeEnd, seventh.length - 1]) {
      Fs.writeFileSync(out, kept.join("\n") + "\n" + seventh.slice(0, cut))
      const resumed = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
      expect(resumed.code, `cut at ${cut}`).toBe(0)
      expect(resumed.stderr, `cut at ${cut}`).toContain("(9 done in earlier runs)")
      // readResults parses every line: one that is not JSON fails here.
      expect(readResults(out).map((line) => line.index).sort((a, b) => a - b), `cut at ${cut}`).toEqual(
        Array.from({ length: 10 }, (_, i) => i)
      )
    }

    Fs.appendFileSync(persons, `${UIDS[0]}\n`)
    const changed = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
    expect(changed.code).toBe(2)
    expect(changed.stderr).toContain("the persons file changed since the batch started")
  })

  it("random server faults: each failed person is in the results with its typed error, exit 3", async () => {
    const faulty = await MockClinicalServer.start()
    try {
      await faulty.setRandomFaults("medications", {
        seed: 3,
        faults: [{ probability: 0.2, fault: MockClinicalServer.Fault.status(500) }]
      })
      const persons = personsFile("batch4.txt", 200)
      const out = Path.join(dir, "batch4.ndjson")
      const ran = await Cli.run(["batch", "medications", "--persons-file", persons, "--out", out], {
        env: { ...envOf(faulty.url), CLINICAL_MAX_RETRIES: "0" }
      })
      expect(ran.code).toBe(3)
      const results = readResults(out)
      expect(results).toHaveLength(200)
      const failed = results.filter((line) => line.outcome === "Failure")
      expect(failed.length).toBe((await faulty.counters()).byStatus[500])
      expect(failed.length).toBeGreaterThan(10)
      for (const line of failed) expect(line.error).toMatchObject({ _tag: "ServerError", status: 500 })
      expect(ran.stderr).toContain(`${failed.length} ServerError`)
      await expectNoSecretIn(ran, faulty)
    } finally {
      await faulty.close()
    }
  })

  it("a refused ApplicationId stops early with one clear message, exit 4, nothing sent", async () => {
    const persons = personsFile("batch5.txt", 500)
    const out = Path.join(dir, "batch5.ndjson")
    const before = await mock.counters()
    const ran = await Cli.run(["batch", "medications", "--persons-file", persons, "--out", out], {
      env: envOf(mock.url, "0f8fad5b-d9cb-469f-a165-70867728950e")
    })
    expect(ran.code).toBe(4)
    expect(ran.stderr).toContain("stopped early: the credentials were refused")
    expect(ran.stderr.match(/the token host refused the ApplicationId/g)).toHaveLength(1)
    expect(ran.stderr).toMatch(
      /\d+ persons failed for a cause that may go away or were not sent: fix the cause and run the same command with --resume/
    )
    const after = await mock.counters()
    expect(after.medicationRequests).toBe(before.medicationRequests)
    expect(after.tokenRequests - before.tokenRequests).toBeLessThanOrEqual(2)
    expectNone("stderr", ran.stderr, ["0f8fad5b-d9cb-469f-a165-70867728950e"])
  })
})

describe("effect-clinical batch: what review broke", { timeout: 60_000 }, () => {
  const personsFile = (name: string, count: number) =>
    file(name, Array.from({ length: count }, (_, i) => UIDS[i % 3]!).join("\n") + "\n")

  it("refused credentials exit 4 however few the persons; fixed and resumed, each is sent again once", async () => {
    const persons = personsFile("review1.txt", 3)
    const out = Path.join(dir, "review1.ndjson")
    const args = ["batch", "medications", "--persons-file", persons, "--out", out]
    const refused = await Cli.run(args, { env: envOf(mock.url, "0f8fad5b-d9cb-469f-a165-70867728950e") })
    expect(refused.code).toBe(4)
    expect(refused.stderr).toContain("stopped early: the credentials were refused")
    const resumed = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
    expect(resumed.code).toBe(0)
    const results = Fs.readFileSync(out, "utf8").trim().split("\n").map((line) => JSON.parse(line))
    expect(results.map((line) => line.index).sort()).toEqual([0, 1, 2])
    expect(results.every((line) => line.outcome === "Success")).toBe(true)
  })

  it("a refused date or --concurrency exits 2 and creates no file", async () => {
    const persons = personsFile("review2.txt", 3)
    for (
      const extra of [
        ["--start-date", "2024-13-01"],
        ["--start-date", "2024-05-02", "--end-date", "2024-05-01"],
        ["--concurrency", "0"],
        ["--concurrency", "1000000"]
      ]
    ) {
      const out = Path.join(dir, `review2-${extra.join("")}.ndjson`)
      const ran = await Cli.run(["batch", "medications", "--persons-file", persons, "--out", out, ...extra], {
        env: envOf(mock.url)
      })
      expect(ran.code, extra.join(" ")).toBe(2)
      expect(Fs.existsSync(out), extra.join(" ")).toBe(false)
      expect(Fs.existsSync(`${out}.checkpoint.json`), extra.join(" ")).toBe(false)
    }
  })

  it("a PersonUid the service echoes inside its items is not written or printed", async () => {
    const echoing = await MockClinicalServer.start({
      persons: [{
        ...ELEANOR!,
        medications: [{ ...ELEANOR!.medications[0]!, Instructions: `for ${ELEANOR!.personUid}` }]
      }]
    })
    try {
      const persons = file("review3.txt", `${ELEANOR!.personUid}\n`)
      const out = Path.join(dir, "review3.ndjson")
      const batch = await Cli.run(["batch", "medications", "--persons-file", persons, "--out", out], {
        env: envOf(echoing.url)
      })
      expect(batch.code).toBe(0)
      expect(Fs.readFileSync(out, "utf8")).toContain("for <redacted>")
      expectNone("results", Fs.readFileSync(out, "utf8"), [ELEANOR!.personUid])
      const printed = await Cli.run(["medications", "--json", ELEANOR!.personUid], { env: envOf(echoing.url) })
      expect(printed.code).toBe(0)
      expect(printed.stdout).toContain("for <redacted>")
      expectNone("stdout", printed.stdout, [ELEANOR!.personUid])
    } finally {
      await echoing.close()
    }
  })
})

describe("effect-clinical data commands: what review broke", { timeout: 60_000 }, () => {
  it("a mistyped option or a second - is a usage error, and nothing is sent", async () => {
    const before = (await mock.counters()).medicationRequests
    for (
      const args of [["--bogus", ELEANOR!.personUid], [ELEANOR!.personUid, "--start-dat", "2024-01-01"], ["-", "-"]]
    ) {
      const ran = await Cli.run(["medications", ...args], { env: envOf(mock.url), input: `${MARCUS!.personUid}\n` })
      expect(ran.code, args.join(" ")).toBe(2)
    }
    expect((await mock.counters()).medicationRequests).toBe(before)
  })

  it("a server's escape sequences never reach the terminal", async () => {
    const hostile = await MockClinicalServer.start()
    try {
      const sequence = "\u001b]0;owned\u0007\u001b[2J"
      await hostile.injectFaults("medications", [
        MockClinicalServer.Fault.status(400, {
          body: JSON.stringify({ Success: false, ErrorType: sequence, ErrorMessage: `bad ${sequence}` })
        }),
        MockClinicalServer.Fault.status(400, {
          body: JSON.stringify({ Success: false, ErrorType: sequence, ErrorMessage: `bad ${sequence}` })
        })
      ])
      const ran = await Cli.run(["medications", ELEANOR!.personUid, MARCUS!.personUid], { env: envOf(hostile.url) })
      expect(ran.code).toBe(1)
      expect(ran.stdout).toContain("bad ?]0;owned??[2J")
      expect(ran.stdout + ran.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/)
    } finally {
      await hostile.close()
    }
  })

  it("a reader that stops early (| head -1) ends the output quietly", async () => {
    const persons = file("many.txt", Array.from({ length: 50 }, (_, i) => UIDS[i % 3]!).join("\n"))
    const ran = await new Promise<{ status: string; stderr: string }>((resolve) => {
      const child = spawn("bash", [
        "-c",
        `"${process.execPath}" "${Cli.BIN}" medications --ndjson --persons-file "${persons}" | head -1 > /dev/null; echo "\${PIPESTATUS[0]}"`
      ], {
        env: { PATH: process.env.PATH ?? "", ...envOf(mock.url) }
      })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk: Buffer) => stdout += chunk)
      child.stderr.on("data", (chunk: Buffer) => stderr += chunk)
      child.on("close", () => resolve({ status: stdout.trim(), stderr }))
    })
    expect(ran.stderr).not.toContain("EPIPE")
    expect(ran.status).toBe("0")
  })
})

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
