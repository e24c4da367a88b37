/**
 * The `effect-clinical` executable under attack (the built bin, a child process): links planted
 * where it writes, a server whose text holds terminal escapes or echoes secrets, an input line of
 * any length, a secret typed where a name goes. Each case is what a user would see: the exit code,
 * stdout and stderr, and the files left behind.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import { expectNone, FORMS } from "./support/Leaks.js"
import * as Tmpfs from "./support/Tmpfs.js"

const [ELEANOR, MARCUS, PRIYA] = MockClinicalServer.fixturePersons
const APP = MockClinicalServer.demoApplicationId
const UIDS = [ELEANOR!.personUid, MARCUS!.personUid, PRIYA!.personUid]

let mock: MockClinicalServer.Started
let dir = ""
beforeAll(async () => ({ dir, mock } = await Cli.setUp("effect-clinical-cli-hostile-")))
afterAll(() => Cli.tearDown({ dir, mock }))

const envOf = (url: string) => Cli.settingsFor(url)

/** A directory of the test's own (owner-only), holding `files`. */
const workspace = (name: string, files: Readonly<Record<string, string>> = {}) => {
  const path = Path.join(dir, name)
  Fs.mkdirSync(path, { mode: 0o700 })
  for (const [file, text] of Object.entries(files)) Fs.writeFileSync(Path.join(path, file), text)
  return path
}

const PERSONS = UIDS.join("\n") + "\n"

describe("batch never writes through a link someone planted", { timeout: 60_000 }, () => {
  it("a link at the checkpoint's name is replaced, not followed: the file it points to is untouched", async () => {
    const here = workspace("planted-checkpoint", { "persons.txt": PERSONS, "victim.txt": "the victim's own\n" })
    const out = Path.join(here, "results.ndjson")
    Fs.symlinkSync(Path.join(here, "victim.txt"), `${out}.checkpoint.json`)
    const ran = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
      {
        env: envOf(mock.url)
      }
    )
    expect(ran.code, ran.stderr).toBe(0)
    expect(Fs.readFileSync(Path.join(here, "victim.txt"), "utf8")).toBe("the victim's own\n")
    const checkpoint = Fs.lstatSync(`${out}.checkpoint.json`)
    expect(checkpoint.isSymbolicLink()).toBe(false)
    expect(checkpoint.mode & 0o777).toBe(0o600)
    expect(JSON.parse(Fs.readFileSync(`${out}.checkpoint.json`, "utf8"))).toMatchObject({ operation: "medications" })
  })

  it("a dangling link at --out is refused before anything is sent, and its target is never created", async () => {
    const here = workspace("dangling-out", { "persons.txt": PERSONS })
    const target = Path.join(here, "elsewhere.ndjson")
    const out = Path.join(here, "results.ndjson")
    Fs.symlinkSync(target, out)
    const before = (await mock.counters()).dataRequests
    const ran = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
      {
        env: envOf(mock.url)
      }
    )
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain(`${out} is a symbolic link`)
    expect(Fs.existsSync(target)).toBe(false)
    expect(Fs.existsSync(`${out}.checkpoint.json`)).toBe(false)
    expect((await mock.counters()).dataRequests).toBe(before)
  })

  /** A batch of three persons run to its end in a workspace of its own, beside a file to protect. */
  const finishedBatch = async (name: string) => {
    const here = workspace(name, { "persons.txt": PERSONS, "victim.txt": "the victim's own\n" })
    const out = Path.join(here, "results.ndjson")
    const args = ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out]
    expect((await Cli.run(args, { env: envOf(mock.url) })).code).toBe(0)
    return { args, here, out }
  }

  it("--resume refuses a link at --out or at the checkpoint, and writes nothing through either", async () => {
    const { args, here, out } = await finishedBatch("resume-links")
    const results = Fs.readFileSync(out, "utf8")

    // The results file moved away and a link put in its place.
    Fs.renameSync(out, Path.join(here, "moved.ndjson"))
    Fs.symlinkSync(Path.join(here, "victim.txt"), out)
    const throughOut = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
    expect(throughOut.code).toBe(2)
    expect(throughOut.stderr).toContain(`${out} is a symbolic link`)
    expect(Fs.readFileSync(Path.join(here, "victim.txt"), "utf8")).toBe("the victim's own\n")
    Fs.unlinkSync(out)
    Fs.renameSync(Path.join(here, "moved.ndjson"), out)

    const checkpoint = Fs.readFileSync(`${out}.checkpoint.json`, "utf8")
    Fs.writeFileSync(Path.join(here, "copy.json"), checkpoint)
    Fs.unlinkSync(`${out}.checkpoint.json`)
    Fs.symlinkSync(Path.join(here, "copy.json"), `${out}.checkpoint.json`)
    const throughCheckpoint = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
    expect(throughCheckpoint.code).toBe(2)
    expect(throughCheckpoint.stderr).toContain(`${out}.checkpoint.json is a symbolic link`)
    expect(Fs.readFileSync(out, "utf8")).toBe(results)
  })

  it("a resume writes its copy under a new random name: a link planted at the old fixed name is left alone", async () => {
    const { args, here, out } = await finishedBatch("resume-temp")
    // A crash cut the last line: the resume rewrites the file, keeping the two whole lines.
    const whole = Fs.readFileSync(out, "utf8")
    Fs.writeFileSync(out, whole.slice(0, whole.length - 10))
    Fs.symlinkSync(Path.join(here, "victim.txt"), `${out}.resuming`)
    const resumed = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(Fs.readFileSync(Path.join(here, "victim.txt"), "utf8")).toBe("the victim's own\n")
    const lines = Fs.readFileSync(out, "utf8").trim().split("\n").map((line) => JSON.parse(line))
    expect(lines.map((line) => line.index).sort()).toEqual([0, 1, 2])
    expect(Fs.lstatSync(out).isSymbolicLink()).toBe(false)
    expect(Fs.statSync(out).mode & 0o777).toBe(0o600)
    // Nothing of the resume is left beside it but the results and the checkpoint (and the planted link).
    expect(Fs.readdirSync(here).sort()).toEqual(
      ["persons.txt", "results.ndjson", "results.ndjson.checkpoint.json", "results.ndjson.resuming", "victim.txt"]
    )
  })

  it("a FIFO planted at the checkpoint or at --out is refused at once, never opened (from review)", async () => {
    const { args, here, out } = await finishedBatch("fifo")
    Fs.unlinkSync(`${out}.checkpoint.json`)
    execFileSync("mkfifo", [`${out}.checkpoint.json`])
    const resumed = await Cli.run([...args, "--resume"], { env: envOf(mock.url), timeoutMillis: 20_000 })
    expect(resumed.code).toBe(2)
    expect(resumed.stderr).toContain(`${out}.checkpoint.json is not a regular file`)
    const fresh = Path.join(here, "fifo.ndjson")
    execFileSync("mkfifo", [fresh])
    const started = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", fresh],
      { env: envOf(mock.url), timeoutMillis: 20_000 }
    )
    expect(started.code).toBe(2)
  })

  it("a directory others may write to is named in a warning on stderr", async () => {
    const here = workspace("shared-dir", { "persons.txt": PERSONS })
    Fs.chmodSync(here, 0o1777)
    const out = Path.join(here, "results.ndjson")
    const ran = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
      {
        env: envOf(mock.url)
      }
    )
    expect(ran.code).toBe(0)
    expect(ran.stderr).toContain(`warning: other users may create files in the directory of ${out}`)
    // Writable by the user's own group (each user a group of their own): no one else's.
    const own = workspace("own-dir", { "persons.txt": PERSONS })
    Fs.chmodSync(own, 0o770)
    const quiet = await Cli.run([
      "batch",
      "medications",
      "--persons-file",
      Path.join(own, "persons.txt"),
      "--out",
      Path.join(own, "results.ndjson")
    ], { env: envOf(mock.url) })
    expect(quiet.code).toBe(0)
    expect(quiet.stderr).not.toContain("warning")
  })
})

/** Anything a terminal acts on rather than shows; line breaks apart (checked by counting lines). */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/u
const ESCAPES = "\u001b]0;owned\u0007\u001b[2J\u009b31m\u202e\u00ad\u{e0041}"

describe("a full disk under the batch's results", { timeout: 120_000 }, () => {
  it("the batch stops saying so, its file holds whole lines only, and --resume finishes once space returns", async () => {
    const disk = Tmpfs.mount(256)
    try {
      const persons = Path.join(dir, "thirty.txt")
      Fs.writeFileSync(persons, Array.from({ length: 10 }, () => PERSONS).join(""))
      const out = Path.join(disk.path, "results.ndjson")
      // Two pages left: the checkpoint's, and one for the results (about five of their thirty lines).
      disk.fill(8192)
      const args = ["batch", "medications", "--persons-file", persons, "--out", out, "--concurrency", "1"]
      const full = await Cli.run(args, { env: envOf(mock.url) })
      expect(full.code).not.toBe(0)
      expect(full.stderr).toContain("ENOSPC")
      const kept = Fs.readFileSync(out, "utf8")
      expect(kept.length).toBeGreaterThan(0)
      expect(kept.endsWith("\n")).toBe(true)
      for (const line of kept.trimEnd().split("\n")) expect(() => JSON.parse(line)).not.toThrow()
      disk.free()
      const resumed = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
      expect(resumed.code, resumed.stderr).toBe(0)
      const lines = Fs.readFileSync(out, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line))
      expect(lines.map((line) => line.index).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i))
      expect(lines.every((line) => line.outcome === "Success")).toBe(true)
    } finally {
      disk.unmount()
    }
  })
})

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

/** What a data request carried, as a service that echoes it sees it. */
interface Carried {
  readonly app: string
  readonly bearer: string
  readonly uid: string
  readonly body: string
}

/** A service whose token answers are good, and whose data answers `answer` writes from what the request carried. */
const echoingService = async (answer: (carried: Carried) => { readonly status: number; readonly body: unknown }) => {
  const token = `${Buffer.from("an echoed token, long enough to be a real one".repeat(2)).toString("base64")}+/=`
  const server = Http.createServer((req, res) => {
    let body = ""
    req.on("data", (chunk: Buffer) => body += chunk.toString("utf8"))
    req.on("end", () => {
      const now = Date.now()
      if ((req.url ?? "").toLowerCase() === "/api/server/token") {
        res.writeHead(200, {
          "Content-Type": "application/json",
          Date: new Date(now).toUTCString(),
          TOKEN_EXPIRES: new Date(now + 3_600_000).toUTCString()
        })
        return res.end(JSON.stringify({ Token: token, TokenType: "Bearer" }))
      }
      const answered = answer({
        app: String(req.headers.applicationid),
        bearer: String(req.headers.authorization).slice("Bearer ".length),
        uid: JSON.parse(body).personuid as string,
        body
      })
      res.writeHead(answered.status, { "Content-Type": "application/json" })
      res.end(JSON.stringify(answered.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** Items that echo everything the request carried. */
const echoedInItems = ({ app, bearer, uid }: Carried) => ({
  status: 200,
  body: {
    Success: true,
    Medications: [{
      Name: "Lisinopril",
      Note: `app ${app.toLowerCase()}, token ${encodeURIComponent(bearer)}, person ${uid}`,
      [bearer]: app.replace(/-/g, "")
    }]
  }
})

describe("what the server echoes of a request is never written out", { timeout: 60_000 }, () => {
  it("the token and the ApplicationId inside items: redacted on stdout and in the batch's results", async () => {
    const service = await echoingService(echoedInItems)
    try {
      const secrets = [service.token, APP, ELEANOR!.personUid]
      const printed = await Cli.run(["medications", "--json", ELEANOR!.personUid], { env: envOf(service.url) })
      expect(printed.code, printed.stderr).toBe(0)
      expect(JSON.parse(printed.stdout)[0].items).toEqual([{
        Name: "Lisinopril",
        Note: "app <redacted>, token <redacted>, person <redacted>",
        "<redacted>": "<redacted>"
      }])
      expectNone("stdout", printed.stdout, secrets)
      const table = await Cli.run(["medications", ELEANOR!.personUid], { env: envOf(service.url) })
      expectNone("table", table.stdout, secrets)

      const here = workspace("echoes", { "persons.txt": `${ELEANOR!.personUid}\n` })
      const out = Path.join(here, "results.ndjson")
      const batch = await Cli.run(
        ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
        { env: envOf(service.url) }
      )
      expect(batch.code, batch.stderr).toBe(0)
      expect(Fs.readFileSync(out, "utf8")).toContain("person <redacted>")
      expectNone("results", Fs.readFileSync(out, "utf8"), secrets)
    } finally {
      await service.close()
    }
  })
})

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

describe(
  "what a server echoes in its errors never reaches the terminal, in any form (issue 22)",
  { timeout: 60_000 },
  () => {
    it("each form an ASP.NET/IIS service could write, one at a time, on stdout and stderr", async () => {
      // Side by side: each is a process of its own, several seconds on a busy machine.
      await Promise.all(
        FORMS.filter(([form]) => form !== "a date reformatted").map(async ([form, write]) => {
          const service = await echoingService(({ app, bearer, body, uid }) => ({
            status: 400,
            body: {
              Success: false,
              ErrorType: "Refused",
              ErrorMessage: [app, bearer, uid, body].flatMap(write).join(" | ")
            }
          }))
          try {
            // NDJSON: the person's error as data on stdout, and its line on stderr (a table of one
            // failed person prints nothing: the error line says it, once).
            const ran = await Cli.run(["medications", "--ndjson", ELEANOR!.personUid], { env: envOf(service.url) })
            expect(ran.code, form).toBe(1)
            expect(ran.stdout, form).toContain("<redacted>")
            expect(ran.stderr, form).toContain("<redacted>")
            expectNone(`stdout (${form})`, ran.stdout, [service.token, APP, ELEANOR!.personUid])
            expectNone(`stderr (${form})`, ran.stderr, [service.token, APP, ELEANOR!.personUid])
          } finally {
            await service.close()
          }
        })
      )
    }, 180_000)
  }
)
