/**
 * `effect-clinical medications` and every person-data command against the mock: the table, --json
 * and --ndjson output, a person failing alone, bad dates and options as usage errors, a server's
 * escape sequences kept from the terminal, and no PersonUid in any output.
 */
import { describe, expect, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import {
  dir,
  ELEANOR,
  envOf,
  expectNoSecretIn,
  file,
  MARCUS,
  mock,
  PRIYA,
  setUpCli,
  UIDS
} from "./support/cliFixtures.js"
import { expectNone } from "./support/Leaks.js"

setUpCli()

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
