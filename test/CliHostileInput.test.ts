/**
 * The `effect-clinical` executable given hostile input (the built bin, a child process): an input line
 * of any length refused as that line's error in bounded memory, and a secret typed where a name goes
 * never repeated.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import { APP, ELEANOR, envOf, MARCUS, mock, PERSONS, PRIYA, setUpCli, workspace } from "./support/cliFixtures.js"
import { expectNone } from "./support/Leaks.js"

setUpCli("effect-clinical-cli-hostile-")

describe(
  "an input line of any length: refused as that line's typed error, in bounded memory",
  { timeout: 60_000 },
  () => {
    // 200 MiB in one line: read whole, it would need 200 MiB of heap, more than the cap below allows.
    const HUGE = 200 * 1024 * 1024
    const CAPPED = { NODE_OPTIONS: "--max-old-space-size=96" }
    const hugeLine = (letter: string) => Buffer.alloc(HUGE, letter)

    it("unit: lines are cut at the cap plus one byte, the rest skipped; CRLF and a last line without a break", async () => {
      const { boundedLines } = await import("../src/cli/persons.js")
      const chunks = async function*() {
        yield Buffer.from("ab\r\ncdefgh")
        yield Buffer.from("ijk\n\nlast")
      }
      const lines: Array<string> = []
      for await (const line of boundedLines(chunks(), 4)) lines.push(line)
      expect(lines).toEqual(["ab", "cdefg", "", "last"])
    })

    it("--persons-file: the long line's person fails alone, the others are answered", async () => {
      const here = workspace("huge-line")
      const persons = Path.join(here, "persons.txt")
      Fs.writeFileSync(persons, `${ELEANOR!.personUid}\n`)
      Fs.appendFileSync(persons, hugeLine(" "))
      Fs.appendFileSync(persons, `${MARCUS!.personUid}\n${PRIYA!.personUid}\n`)
      const ran = await Cli.run(["medications", "--ndjson", "--persons-file", persons], {
        env: { ...envOf(mock.url), ...CAPPED }
      })
      expect(ran.signal, ran.stderr.slice(0, 300)).toBe(null)
      const lines = ran.stdout.trim().split("\n").map((line) => JSON.parse(line))
      expect(lines.map((line) => line.person).sort()).toEqual([1, 2, 3])
      expect(lines.find((line) => line.person === 1).items).toEqual(ELEANOR!.medications)
      expect(lines.find((line) => line.person === 2).error).toMatchObject({
        _tag: "InvalidRequest",
        field: "personUid"
      })
      expect(lines.find((line) => line.person === 3).items).toEqual(PRIYA!.medications)
      expect(ran.stderr).toContain("1 of 3 persons failed")
    })

    it("standard input: a pass code line of 200 MiB is refused before anything is sent, exit 2", async () => {
      const before = await mock.counters()
      const ran = await Cli.run(["authenticate"], {
        env: { ...envOf(mock.url), ...CAPPED },
        input: Buffer.concat([hugeLine("p"), Buffer.from(`\n${ELEANOR!.dateOfBirth}\n`)])
      })
      expect(ran.signal, ran.stderr.slice(0, 300)).toBe(null)
      expect(ran.code).toBe(2)
      expect(ran.stderr).toContain("authenticate request refused before sending: passCode")
      expect(ran.stdout).toBe("")
      expect((await mock.counters()).dataRequests).toBe(before.dataRequests)
    })
  }
)

describe("a secret typed in the wrong place is never repeated (issue 22)", { timeout: 60_000 }, () => {
  it("an ApplicationId where the operation goes: unknown operation, not shown", async () => {
    const here = workspace("typed-secret", { "persons.txt": PERSONS })
    const ran = await Cli.run(
      ["batch", APP, "--persons-file", Path.join(here, "persons.txt"), "--out", Path.join(here, "results.ndjson")],
      { env: envOf(mock.url) }
    )
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain("unknown operation (not shown: it does not look like an operation's name)")
    expectNone("stderr", ran.stderr + ran.stdout, [APP])
    // A mistyped name is shown, to help.
    const typo = await Cli.run(
      ["batch", "medication", "--persons-file", Path.join(here, "persons.txt"), "--out", Path.join(here, "r.ndjson")],
      { env: envOf(mock.url) }
    )
    expect(typo.stderr).toContain(`unknown operation "medication"`)
  })

  it("a path that holds a secret's shape is repeated without it", async () => {
    const here = workspace("typed-path", { "persons.txt": PERSONS })
    const out = Path.join(here, `${APP}.ndjson`)
    Fs.writeFileSync(out, "")
    const ran = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
      {
        env: envOf(mock.url)
      }
    )
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain("<redacted>.ndjson exists")
    expectNone("stderr", ran.stderr, [APP])
  })

  it("--env-file, Node's own option, is refused with the name of ours", async () => {
    const here = workspace("env-file", {
      "settings.env": `CLINICAL_BASE_URL=${mock.url}\nCLINICAL_APPLICATION_ID=${APP}\n`
    })
    const ran = await Cli.run(["token", "--env-file", Path.join(here, "settings.env")])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain("use --settings-file")
    const ours = await Cli.run(["token", "--settings-file", Path.join(here, "settings.env")])
    expect(ours.code, ours.stderr).toBe(0)
  })
})
