/**
 * The `effect-clinical` executable against a server whose text holds terminal escapes or invents
 * failures (the built bin, a child process): nothing a terminal acts on reaches it, no line is added,
 * and the batch summary stays bounded.
 */
import { describe, expect, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import { ELEANOR, envOf, setUpCli, UIDS, workspace } from "./support/cliFixtures.js"

setUpCli("effect-clinical-cli-hostile-")

/** Anything a terminal acts on rather than shows; line breaks apart (checked by counting lines). */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/u
const ESCAPES = "\u001b]0;owned\u0007\u001b[2J\u009b31m\u202e\u00ad\u{e0041}"

describe("a server's text never drives the terminal or adds lines", { timeout: 60_000 }, () => {
  const hostileItem = {
    [`${ESCAPES}Name`]: `Caf${ESCAPES}\nerror: a line the server wrote`,
    Dose: "1\u2028second\rthird"
  }
  const withItem = () =>
    MockClinicalServer.start({
      persons: [{ ...ELEANOR!, medications: [hostileItem as unknown as MockClinicalServer.MockMedication] }]
    })

  it("a table: field names and values made printable, one line per row", async () => {
    const server = await withItem()
    try {
      const ran = await Cli.run(["medications", ELEANOR!.personUid], { env: envOf(server.url) })
      expect(ran.code, ran.stderr).toBe(0)
      expect(ran.stdout).not.toMatch(UNSAFE)
      const lines = ran.stdout.trimEnd().split("\n")
      expect(lines).toHaveLength(4)
      expect(lines[1]).toContain("?]0;owned??[2J?31m???Name")
      expect(ran.stdout).not.toMatch(/^error: /m)
    } finally {
      await server.close()
    }
  })

  it("--json and --ndjson: nothing raw a terminal acts on, and the values read back exactly", async () => {
    const server = await withItem()
    try {
      const json = await Cli.run(["medications", "--json", ELEANOR!.personUid], { env: envOf(server.url) })
      expect(json.code, json.stderr).toBe(0)
      expect(json.stdout).not.toMatch(UNSAFE)
      expect(JSON.parse(json.stdout)[0].items).toEqual([hostileItem])
      const ndjson = await Cli.run(["medications", "--ndjson", ELEANOR!.personUid], { env: envOf(server.url) })
      expect(ndjson.stdout).not.toMatch(UNSAFE)
      expect(ndjson.stdout.trimEnd().split("\n")).toHaveLength(1)
      expect(JSON.parse(ndjson.stdout).items).toEqual([hostileItem])
    } finally {
      await server.close()
    }
  })

  it("a server's ErrorType and ErrorMessage on stderr: printable, on the lines the command writes", async () => {
    const server = await MockClinicalServer.start()
    try {
      const refusal = MockClinicalServer.Fault.status(400, {
        body: {
          Success: false,
          ErrorType: `Refused${ESCAPES}\nresults: /somewhere/else`,
          ErrorMessage: `no${ESCAPES}\nerror: a line the server wrote`
        }
      })
      await server.injectFaults("medications", [refusal, refusal])
      const one = await Cli.run(["medications", ELEANOR!.personUid], { env: envOf(server.url) })
      expect(one.code).toBe(1)
      expect(one.stdout + one.stderr).not.toMatch(UNSAFE)
      expect(one.stdout + one.stderr).not.toMatch(/^(error: a line|results: \/somewhere)/m)

      const here = workspace("summary-escapes", { "persons.txt": `${ELEANOR!.personUid}\n` })
      const out = Path.join(here, "results.ndjson")
      const batch = await Cli.run(
        ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
        { env: envOf(server.url) }
      )
      expect(batch.code).toBe(3)
      expect(batch.stderr).toContain("1 ApiError Refused?]0;owned??[2J?31m????results: /somewhere/e…")
      expect(batch.stderr).not.toMatch(UNSAFE)
      expect(batch.stderr).not.toMatch(/^results: \/somewhere/m)
    } finally {
      await server.close()
    }
  })
})

describe("the batch summary stays bounded whatever the server invents", { timeout: 60_000 }, () => {
  it("at most ten kinds of failure by name, the rest counted together", async () => {
    const server = await MockClinicalServer.start()
    try {
      const count = 25
      await server.injectFaults(
        "medications",
        Array.from({ length: count }, (_, i) =>
          MockClinicalServer.Fault.status(400, {
            body: { Success: false, ErrorType: `Invented kind ${i}: ${"very long ".repeat(20)}`, ErrorMessage: null }
          }))
      )
      const here = workspace("many-kinds", {
        "persons.txt": Array.from({ length: count }, (_, i) => UIDS[i % 3]).join("\n") + "\n"
      })
      const out = Path.join(here, "results.ndjson")
      const ran = await Cli.run(
        ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
        { env: envOf(server.url) }
      )
      expect(ran.code).toBe(3)
      const line = ran.stderr.split("\n").find((text) => text.startsWith("failures this run: "))!
      expect(line.match(/\d+ ApiError Invented kind \d+: [a-z ]*…/g)).toHaveLength(10)
      expect(line).toContain(`${count - 10} of other kinds`)
      expect(line.length).toBeLessThan(1000)
      // Each person's own error is whole in the results.
      const kinds = Fs.readFileSync(out, "utf8").trim().split("\n").map((text) => JSON.parse(text).error.errorType)
      expect(new Set(kinds).size).toBe(count)
    } finally {
      await server.close()
    }
  })
})
