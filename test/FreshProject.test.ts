/**
 * What a user does first, tested: pack the library, install it into a fresh project with exactly
 * the README's install line (the package name replaced by the tarball), then run programs there
 * (an ES module over each entry point, a CommonJS file that require()s them) and type-check a
 * `.cts` and an ESM file against the published declarations. Needs the npm registry.
 */
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as RedisServer from "./support/RedisServer.js"

const run = promisify(execFile)
const root = Path.resolve(import.meta.dirname, "..")

/** The Effect 3 line's install line of the README's Install section. */
const readmeInstallLine = (): string => {
  const readme = Fs.readFileSync(Path.join(root, "README.md"), "utf8")
  const section = readme.slice(readme.indexOf("## Install"))
  // The Effect 3 line's: the Effect 4 line's is effect4/test/FreshProject.test.ts's.
  const line = section.split("\n").find((text) => text.startsWith("npm install effect-clinical@^3 "))
  if (line === undefined) throw new Error("the README's Install section has no npm install line for the Effect 3 line")
  return line.trim()
}

const ESM_PROGRAM = `
import { Effect } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"

const viaEffect = Effect.scoped(Effect.gen(function*() {
  const mock = yield* MockClinicalServer.make()
  const baseUrl = yield* MockClinicalServer.serve(mock)
  const client = ClinicalClient.layerUndici({ baseUrl, applicationId: MockClinicalServer.demoApplicationId })
  const { medications } = yield* MedicationService.get(mock.persons[0].personUid).pipe(Effect.provide(client))
  return medications.length
}))
console.log("effect", await Effect.runPromise(viaEffect))

const mock = await MockClinicalServer.start()
const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
console.log("promise", (await clinical.medications(mock.persons[1].personUid)).medications.length)
await clinical.close()
await mock.close()
`

const CJS_PROGRAM = `
const { ApiError, createClinicalClient } = require("effect-clinical/promise")
const { MockClinicalServer } = require("effect-clinical/testing")

;(async () => {
  const mock = await MockClinicalServer.start()
  const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
  const { medications } = await clinical.medications(mock.persons[2].personUid)
  const error = await clinical.medications("nobody").catch((e) => e)
  console.log("require", medications.length, error instanceof ApiError, error._tag)
  await clinical.close()
  await mock.close()
})()
`

/** docs/observability.md's setup, as an application writes it: spans exported through @effect/opentelemetry. */
const OTEL_PROGRAM = `
import { NodeSdk } from "@effect/opentelemetry"
import { SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"

// Collects the names of exported spans (the SDK's in-memory exporter forgets them at shutdown).
const names = []
const exporter = {
  export: (spans, done) => { names.push(...spans.map((span) => span.name)); done({ code: 0 }) },
  shutdown: () => Promise.resolve()
}
const Telemetry = NodeSdk.layer(() => ({
  resource: { serviceName: "fresh" },
  spanProcessor: new SimpleSpanProcessor(exporter)
}))
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const mock = yield* MockClinicalServer.make()
  const baseUrl = yield* MockClinicalServer.serve(mock)
  yield* MedicationService.get(mock.persons[0].personUid).pipe(
    Effect.provide(ClinicalClient.layerUndici({ baseUrl, applicationId: MockClinicalServer.demoApplicationId })),
    Effect.provide(Telemetry)
  )
})))
console.log(names.sort().join(","))
`

/** The README's first program: the code block of its "Use it in a backend" section, as a user pastes it. */
const readmeFirstProgram = (): string => {
  const readme = Fs.readFileSync(Path.join(root, "README.md"), "utf8")
  const section = readme.slice(readme.indexOf("## Use it in a backend"))
  const match = /```ts\n([\s\S]*?)\n```/.exec(section)
  if (match === null) throw new Error("the README's first program is not in its Use it in a backend section")
  return match[1]!
}

/** An install line of a Markdown file's sh blocks, its continuation lines joined. */
const installLineOf = (file: string, startsWith: string): string => {
  const text = Fs.readFileSync(Path.join(root, file), "utf8").replace(/\\\n\s*/g, "")
  const line = text.split("\n").find((candidate) => candidate.startsWith(startsWith))
  if (line === undefined) throw new Error(`${file} has no line starting with ${startsWith}`)
  return line.trim()
}

/** Type-checked, not run: the published declarations, seen from CommonJS TypeScript. */
const CTS_FILE = `
import { ApiError, type Client, createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"

export const count = async (): Promise<number> => {
  const mock = await MockClinicalServer.start()
  const clinical: Client = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
  // @ts-expect-error a PersonUid is a string, not a number: the types are real, not any
  await clinical.medications(42)
  const { medications } = await clinical.medications(mock.persons[0]!.personUid)
  const failed: unknown = new Error()
  if (failed instanceof ApiError) console.log(failed.errorType)
  await clinical.close()
  return medications.length
}
`

/** docs/distributed.md's Promise worker, as an application writes it: a queue of the mock's persons, read once. */
const QUEUE_PROGRAM = `
import { Effect, Redacted } from "effect"
import { PersonData } from "effect-clinical"
import { ClinicalQueue } from "effect-clinical/bullmq"
import * as Queue from "effect-clinical/bullmq"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"

// Both forms read the same module: the namespace, and its names.
if (Queue.enqueue !== ClinicalQueue.enqueue) throw new Error("two forms of effect-clinical/bullmq")
const mock = await MockClinicalServer.start()
const connection = new Redis(process.env.CLINICAL_REDIS_URL, { maxRetriesPerRequest: null })
const sealingKey = Redacted.make(process.env.CLINICAL_SEALING_KEY)
const options = { connection, sealingKey, operation: PersonData.medications }
await Effect.runPromise(ClinicalQueue.enqueue(options, mock.persons.map((person) => person.personUid)))
const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId, retryRateLimited: false })
const indices = []
let finish
const finished = new Promise((resolve) => (finish = resolve))
const worker = await ClinicalQueue.createWorker(clinical, {
  ...options,
  sink: (record) => {
    indices.push(record.index)
    if (indices.length === mock.persons.length) finish()
  }
})
await finished
await worker.close()
await clinical.close()
await connection.quit()
await mock.close()
console.log("queue", indices.sort().join(","))
`

/** Type-checked, not run: the Effect API's declarations, seen from an ES module. */
const ESM_TYPES_FILE = `
import { Effect } from "effect"
import { ClinicalClient, MedicationService, PersonData } from "effect-clinical"

export const program: Effect.Effect<number, unknown> = MedicationService.get("uid").pipe(
  Effect.map(({ medications }) => medications.length),
  Effect.provide(ClinicalClient.layerUndici({ baseUrl: "https://openapi.example.test", applicationId: "x" }))
)
export const ethnicities = PersonData.getAs(PersonData.ethnicities, PersonData.Ethnicity, "uid")
// @ts-expect-error getAs needs a Schema, not a string
export const wrong = PersonData.getAs(PersonData.ethnicities, "Ethnicity", "uid")
`

describe("a fresh project that installs the packed library with the README's install line", () => {
  let project = ""
  let tarball = ""
  // The tarball's directory and the project (its node_modules some 100 MB): removed after the file.
  const made: Array<string> = []
  // Removing some 100 MB of files takes more than vitest's 10 s on a busy machine.
  afterAll(() => {
    for (const directory of made) Fs.rmSync(directory, { recursive: true, force: true })
  }, 120_000)

  // Before every test, whatever order they run in (the order is random). The install is a test of
  // its own too: a broken install line is a failure, not a skipped suite.
  let installFailed: unknown
  beforeAll(async () => {
    try {
      // dist/ was built by test/support/globalSetup.ts.
      const packed = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-pack-"))
      made.push(packed)
      const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", packed], { cwd: root })
      tarball = Path.join(packed, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename)
      const fresh = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-fresh-"))
      made.push(fresh)
      Fs.writeFileSync(
        Path.join(fresh, "package.json"),
        JSON.stringify({ name: "fresh", private: true, type: "module" })
      )
      const [npm, ...args] = readmeInstallLine().split(/\s+/).map((
        word
      ) => (word.startsWith("effect-clinical@") ? tarball : word))
      await run(npm!, args, { cwd: fresh, timeout: 240_000 })
      project = fresh
    } catch (error) {
      installFailed = error
    }
  }, 300_000)

  it("installs with exactly the README's line", () => {
    if (installFailed !== undefined) throw installFailed
    expect(Fs.existsSync(Path.join(project, "node_modules/effect-clinical/package.json"))).toBe(true)
  })

  /** The fresh project, or a failure: a test that cannot set up must fail, never run in the repository. */
  const fresh = (): string => {
    expect(project, "the install failed").not.toBe("")
    return project
  }

  it("runs the README's first program as pasted, against the mock on loopback", async () => {
    const mock = await MockClinicalServer.start()
    try {
      Fs.writeFileSync(Path.join(fresh(), "first.mjs"), readmeFirstProgram())
      const person = mock.persons[0]!
      const { stdout } = await run(process.execPath, ["first.mjs"], {
        cwd: fresh(),
        timeout: 60_000,
        env: {
          PATH: process.env.PATH ?? "",
          CLINICAL_BASE_URL: mock.url,
          CLINICAL_APPLICATION_ID: mock.applicationId,
          CLINICAL_PERSON_UID: person.personUid
        }
      })
      // One line per medication of the person's since 2020, as the program prints them.
      const lines = stdout.trim().split("\n")
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) {
        expect(person.medications.some((m) => line === `${m.Name} ${m.Strength}: ${m.Instructions}`), line).toBe(true)
      }
      // Refused (and a setting misspelled): stdout stays the program's own, empty; the library's
      // warnings and the error go to stderr; exit 1.
      const refused = await run(process.execPath, ["first.mjs"], {
        cwd: fresh(),
        timeout: 60_000,
        env: {
          PATH: process.env.PATH ?? "",
          CLINICAL_BASE_URL: mock.url,
          CLINICAL_APPLICATION_ID: "00000000-0000-4000-8000-000000000000",
          CLINICAL_REQUEST_TIMOUT: "5s",
          CLINICAL_PERSON_UID: person.personUid
        }
      }).then(
        () => ({ code: 0, stdout: "", stderr: "" }),
        (error: { code: number; stdout: string; stderr: string }) => error
      )
      expect(refused.code).toBe(1)
      expect(refused.stdout).toBe("")
      expect(refused.stderr).toContain("CLINICAL_REQUEST_TIMOUT is not a setting of effect-clinical")
      expect(refused.stderr).toContain("token refresh failed")
      expect(refused.stderr).toMatch(/^error: Unauthorized: /m)
    } finally {
      await mock.close()
    }
  }, 60_000)

  it("type-checks the README's first program under the defaults tsc --init writes", async () => {
    const tsc = Path.join(root, "node_modules/typescript/bin/tsc")
    const directory = Path.join(fresh(), "init-defaults")
    Fs.mkdirSync(directory)
    Fs.writeFileSync(Path.join(directory, "package.json"), JSON.stringify({ type: "module" }))
    await run(process.execPath, [tsc, "--init"], { cwd: directory })
    Fs.writeFileSync(Path.join(directory, "main.ts"), readmeFirstProgram())
    const checked = await run(process.execPath, [tsc, "-p", "."], { cwd: directory }).then(
      () => ({ ok: true, out: "" }),
      (error: { stdout?: string }) => ({ ok: false, out: error.stdout ?? "" })
    )
    expect(checked.out).toBe("")
    expect(checked.ok).toBe(true)
  }, 60_000)

  it("installs Effect 3, not the registry's latest", () => {
    const version = (name: string) =>
      JSON.parse(Fs.readFileSync(Path.join(fresh(), "node_modules", name, "package.json"), "utf8")).version as string
    expect(version("effect")).toMatch(/^3\./)
    expect(version("@effect/platform")).toMatch(/^0\.9\d\./)
    expect(version("@effect/platform-node")).toMatch(/^0\.1\d\d\./)
    expect(Fs.existsSync(Path.join(fresh(), "node_modules/effect-clinical/LICENSE"))).toBe(true)
    expect(Fs.existsSync(Path.join(fresh(), "node_modules/effect-clinical/examples/quick-start.ts"))).toBe(true)
  })

  it("runs an ES module over the Effect, Promise and testing entry points", async () => {
    Fs.writeFileSync(Path.join(fresh(), "main.mjs"), ESM_PROGRAM)
    const { stdout } = await run(process.execPath, ["main.mjs"], { cwd: fresh(), timeout: 60_000 })
    expect(stdout.trim().split("\n")).toEqual(["effect 5", "promise 2"])
  }, 60_000)

  it("installs the effect-clinical executable: its help fits a pipe, and mock-server's hint runs there", async () => {
    const bin = Path.join(fresh(), "node_modules/.bin/effect-clinical")
    const env = { PATH: process.env.PATH ?? "" }
    const help = await run(bin, ["--help"], { cwd: fresh(), timeout: 60_000, env })
    expect(help.stdout).toContain("130 interrupted")
    expect(help.stdout).not.toContain("\u001b")
    for (const line of help.stdout.split("\n")) expect(line.length, line).toBeLessThanOrEqual(100)
    // The mock on a port, and the command it suggests pasted into a shell in this project.
    const server = execFile(bin, ["mock-server"], { cwd: fresh(), env })
    try {
      let printed = ""
      server.stdout!.on("data", (chunk: Buffer) => printed += chunk.toString("utf8"))
      while (!printed.includes("medications ")) await new Promise((resolve) => setTimeout(resolve, 50))
      const suggested = /Try, in another terminal: ([^]*)$/.exec(printed)![1]!
      expect(suggested).toContain("npx effect-clinical medications")
      const tried = await run("sh", ["-c", suggested], { cwd: fresh(), timeout: 60_000, env })
      expect(tried.stdout).toMatch(/^person #1: \d+ items/)
    } finally {
      server.kill("SIGINT")
    }
  }, 60_000)

  it(
    "the executable is one bundle that needs none of the library's peers: --help and token run without them",
    async () => {
      const bin = Path.join(fresh(), "node_modules/.bin/effect-clinical")
      // What the package's bin names: the bundle, a few files, not dist/src/cli's module graph.
      expect(Fs.realpathSync(bin)).toBe(Path.join(fresh(), "node_modules/effect-clinical/dist/bin/effect-clinical.js"))
      const mock = await MockClinicalServer.start()
      const peers = ["effect", "@effect/platform", "@effect/platform-node"].map((name) =>
        Path.join(fresh(), "node_modules", name)
      )
      for (const peer of peers) Fs.renameSync(peer, `${peer}.away`)
      try {
        const env = {
          PATH: process.env.PATH ?? "",
          CLINICAL_BASE_URL: mock.url,
          CLINICAL_APPLICATION_ID: mock.applicationId
        }
        const help = await run(bin, ["--help"], { cwd: fresh(), timeout: 60_000, env })
        expect(help.stdout).toContain("USAGE")
        const token = await run(bin, ["token", "--json"], { cwd: fresh(), timeout: 60_000, env })
        expect(JSON.parse(token.stdout)).toMatchObject({ generation: 1, lifetimeSeconds: 3600 })
        expect((await mock.counters()).tokenRequests).toBe(1)
      } finally {
        for (const peer of peers) Fs.renameSync(`${peer}.away`, peer)
        await mock.close()
      }
    },
    60_000
  )

  it("the Promise client writes nothing to stdout or stderr on a retried failure (issue 23)", async () => {
    const mock = await MockClinicalServer.start()
    try {
      await mock.injectFaults("medications", Array.from({ length: 3 }, () => MockClinicalServer.Fault.status(503)))
      Fs.writeFileSync(
        Path.join(fresh(), "retried.mjs"),
        `import { createClinicalClient } from "effect-clinical/promise"
const clinical = createClinicalClient({ baseUrl: process.env.URL, applicationId: process.env.ID, maxRetries: 2, retryBaseDelay: "1ms" })
const wrong = createClinicalClient({ baseUrl: process.env.URL, applicationId: "00000000-0000-4000-8000-000000000000" })
const outcomes = [
  await clinical.medications(process.env.PERSON).then(() => "resolved", (error) => error._tag),
  await wrong.token().then(() => "resolved", (error) => error._tag)
]
await Promise.all([clinical.close(), wrong.close()])
process.exitCode = outcomes.join() === "ServerError,Unauthorized" ? 0 : 1
`
      )
      const ran = await run(process.execPath, ["retried.mjs"], {
        cwd: fresh(),
        timeout: 60_000,
        env: { PATH: process.env.PATH ?? "", URL: mock.url, ID: mock.applicationId, PERSON: mock.persons[0]!.personUid }
      })
      expect(ran).toMatchObject({ stdout: "", stderr: "" })
    } finally {
      await mock.close()
    }
  }, 60_000)

  it("require()s it from CommonJS", async () => {
    Fs.writeFileSync(Path.join(fresh(), "main.cjs"), CJS_PROGRAM)
    const { stdout } = await run(process.execPath, ["main.cjs"], { cwd: fresh(), timeout: 60_000 })
    expect(stdout.trim()).toBe("require 6 true ApiError")
  }, 60_000)

  it(
    "installs the testing section's line, and docs/testing.md's test written without Effect passes there",
    async () => {
      const [npm, ...args] = installLineOf("README.md", "npm install -D vitest").split(/\s+/)
      expect(installLineOf("docs/testing.md", "npm install -D vitest")).toBe([npm, ...args].join(" "))
      await run(npm!, args, { cwd: fresh(), timeout: 240_000 })
      const version = (name: string) =>
        JSON.parse(Fs.readFileSync(Path.join(fresh(), "node_modules", name, "package.json"), "utf8")).version as string
      expect(version("vitest")).toMatch(/^3\./)
      expect(version("@effect/vitest")).toMatch(/^0\.30\./)
      const test = Fs.readFileSync(Path.join(root, "test/docs/TestingWithoutEffect.test.ts"), "utf8")
      Fs.writeFileSync(Path.join(fresh(), "mock.test.ts"), test)
      const vitest = Path.join(fresh(), "node_modules/vitest/vitest.mjs")
      const { stdout } = await run(process.execPath, [vitest, "run", "mock.test.ts"], {
        cwd: fresh(),
        timeout: 120_000,
        env: { ...process.env, NO_COLOR: "1" }
      })
      expect(stdout).toMatch(/Tests\s+1 passed/)
    },
    300_000
  )

  it(
    "the queue: its command names BullMQ until installed; docs/distributed.md's line installs it; a Promise worker and queue status run",
    async () => {
      const redis = await RedisServer.start()
      const bin = Path.join(fresh(), "node_modules/effect-clinical/dist/bin/effect-clinical.js")
      const env = {
        PATH: process.env.PATH ?? "",
        CLINICAL_REDIS_URL: redis.url,
        CLINICAL_SEALING_KEY: "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4=",
        CLINICAL_BASE_URL: "http://127.0.0.1:1",
        CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId
      }
      try {
        const missing = await run(process.execPath, [bin, "queue", "status"], { cwd: fresh(), env }).then(
          () => ({ code: 0, stderr: "" }),
          (error: { code: number; stderr: string }) => error
        )
        expect(missing).toMatchObject({
          code: 2,
          stderr: expect.stringContaining("npm install bullmq@^6.7 ioredis@^5")
        })
        const [npm, ...args] = installLineOf("docs/distributed.md", "npm install effect-clinical@^3 bullmq").split(
          /\s+/
        )
          .map((word) => (word.startsWith("effect-clinical@") ? tarball : word))
        await run(npm!, args, { cwd: fresh(), timeout: 240_000 })
        Fs.writeFileSync(Path.join(fresh(), "queue.mjs"), QUEUE_PROGRAM)
        const { stdout } = await run(process.execPath, ["queue.mjs"], { cwd: fresh(), env, timeout: 60_000 })
        expect(stdout.trim()).toBe("queue 0,1,2")
        const status = await run(process.execPath, [bin, "queue", "status", "--json", "--sample", "0"], {
          cwd: fresh(),
          env,
          timeout: 60_000
        })
        expect(JSON.parse(status.stdout)).toMatchObject({
          operation: "medications",
          run: { run: 1, persons: 3, done: 3, failed: 0 },
          waiting: 0,
          failed: 0
        })
      } finally {
        await redis.stop()
      }
    },
    300_000
  )

  it("installs docs/observability.md's line and exports the client's spans with @effect/opentelemetry", async () => {
    const [npm, ...args] = installLineOf("docs/observability.md", "npm install @effect/opentelemetry").split(/\s+/)
    await run(npm!, args, { cwd: fresh(), timeout: 240_000 })
    Fs.writeFileSync(Path.join(fresh(), "otel.mjs"), OTEL_PROGRAM)
    const { stdout } = await run(process.execPath, ["otel.mjs"], { cwd: fresh(), timeout: 60_000 })
    // The call and the token refresh, and one CLIENT span per HTTP attempt (the token request, the data request).
    expect(stdout.trim()).toBe("POST,POST,PersonData.medications,TokenService.refresh")
  }, 300_000)

  it("type-checks a .cts and an ES module against the published declarations", async () => {
    Fs.writeFileSync(Path.join(fresh(), "count.cts"), CTS_FILE)
    Fs.writeFileSync(Path.join(fresh(), "program.ts"), ESM_TYPES_FILE)
    Fs.writeFileSync(
      Path.join(fresh(), "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "ES2022",
          lib: ["ES2022", "DOM", "ESNext.Disposable"],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: []
        },
        files: ["count.cts", "program.ts"]
      })
    )
    const checked = await run(process.execPath, [Path.join(root, "node_modules/typescript/bin/tsc"), "-p", "."], {
      cwd: fresh()
    }).then(() => ({ ok: true, out: "" }), (error: { stdout?: string }) => ({ ok: false, out: error.stdout ?? "" }))
    expect(checked.out).toBe("")
    expect(checked.ok).toBe(true)
  }, 60_000)
})
