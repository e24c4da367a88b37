/**
 * `effect-clinical batch` against the mock: one result line per person, owner-only; interrupted and
 * resumed with every person exactly once; faults and refused credentials with their exit codes; no
 * PersonUid in any file or stream.
 */
import { describe, expect, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
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
  secretsOf,
  setUpCli,
  UIDS
} from "./support/cliFixtures.js"
import { expectNone } from "./support/Leaks.js"

setUpCli()

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
