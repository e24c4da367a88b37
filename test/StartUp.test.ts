/**
 * What a process loads (issue 29): importing the package loads nothing a user did not ask for (the
 * mock, Redis, telemetry, the command line, undici before its transport is built), and each of the
 * executable's commands loads its own part of the bundle alone. Read from the module loader itself
 * (test/support/loadedModules.mjs), on the build `npm test` makes first.
 */
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { BIN } from "./support/Cli.js"

const root = Path.resolve(import.meta.dirname, "..")
const HOOK = Path.join(root, "test/support/loadedModules.mjs")

/** The files (paths under the repository) a Node process with `args` loaded, once it exited 0. */
const loadedBy = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Array<string>> =>
  new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", HOOK, ...args],
      { cwd: root, env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env }, timeout: 60_000 },
      (error, _stdout, stderr) => {
        if (error !== null) return reject(new Error(`${args.join(" ")}: ${stderr}`))
        resolve(
          [...stderr.matchAll(/^loaded file:\/\/(.*)$/gm)].map(([, path]) => Path.relative(root, decodeURI(path!)))
        )
      }
    )
  })

const importing = (code: string) => ["--input-type=module", "-e", code]

/** What nobody asked for by importing the library (the mock and the command line, in src/ or core/). */
const unasked =
  /node_modules\/(undici|ioredis|redis|@redis|@opentelemetry|@effect\/cli|@effect\/platform-node|ws)\/|dist\/(src\/)?(testing|cli|bin)\b|dist\/core\/(testing|checkpoint|files|wholeLines)\b/

describe("what a process loads", { timeout: 60_000 }, () => {
  it("importing the package (Effect and Promise entry points) loads none of undici, Redis, telemetry, the mock, the CLI", async () => {
    const loaded = await loadedBy(
      importing(`await import("./dist/src/index.js"); await import("./dist/src/promise.js")`)
    )
    expect(loaded).toContain("dist/src/index.js")
    expect(loaded).toContain("dist/src/promise.js")
    expect(loaded.filter((path) => unasked.test(path))).toEqual([])
  })

  it("undici is loaded when the undici transport is built, and the client works", async () => {
    const mock = await MockClinicalServer.start()
    try {
      const loaded = await loadedBy(
        importing(`
const { Effect } = await import("effect")
const { ClinicalClient, MedicationService } = await import("./dist/src/index.js")
const client = ClinicalClient.layerUndici({ baseUrl: process.env.URL, applicationId: process.env.ID })
const { medications } = await Effect.runPromise(Effect.provide(MedicationService.get(process.env.PERSON), client))
if (medications.length === 0) process.exit(1)`),
        { URL: mock.url, ID: mock.applicationId, PERSON: mock.persons[0]!.personUid }
      )
      expect(loaded.some((path) => path.startsWith("node_modules/undici/"))).toBe(true)
      expect((await mock.counters()).medicationRequests).toBe(1)
    } finally {
      await mock.close()
    }
  })

  it("the executable's --help loads no command's part; token loads undici's Agent alone; mock-server's part stays out", async () => {
    const chunks = (loaded: ReadonlyArray<string>) =>
      loaded.filter((path) => path.startsWith("dist/bin/")).map((path) => Path.basename(path).replace(/-\w+\.js$/, ""))
    const help = chunks(await loadedBy([BIN, "--help"]))
    expect(help).toContain("main")
    for (const part of ["MockClinicalServer", "batchJob", "probe", "undici"]) expect(help).not.toContain(part)
    const mock = await MockClinicalServer.start()
    try {
      const loaded = await loadedBy([BIN, "token"], {
        CLINICAL_BASE_URL: mock.url,
        CLINICAL_APPLICATION_ID: mock.applicationId
      })
      // The bundle alone: nothing from node_modules, whatever is installed beside it.
      expect(loaded.filter((path) => !path.startsWith("dist/bin/"))).toEqual([])
      const token = chunks(loaded)
      expect(token).toContain("undici")
      for (const part of ["MockClinicalServer", "batchJob", "probe"]) expect(token).not.toContain(part)
    } finally {
      await mock.close()
    }
  })
})
