/**
 * `effect-clinical token` and `authenticate` against the mock served on loopback: the token's
 * metadata (the token itself only with `--reveal`), refused credentials, missing settings, and the
 * PersonUid that `authenticate` exists to print, from standard input or a terminal.
 */
import { describe, expect, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import { spawn } from "node:child_process"
import * as Cli from "./support/Cli.js"
import { APP, ELEANOR, envOf, expectNoSecretIn, file, mock, secretsOf, setUpCli, UIDS } from "./support/cliFixtures.js"
import { expectNone } from "./support/Leaks.js"

setUpCli()

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
