/**
 * What a user of the Effect 4 line does first, tested: pack this package, install it into a fresh
 * project with exactly effect4/README.md's install line (the package named by the tarball), then
 * run the README's program as pasted, type-check it strictly (`skipLibCheck` off), run the Promise
 * client, the mock and the executable, and look through `node_modules` for any package of the
 * Effect 3 line. And
 * in a project with no Effect at all: the tarball alone, and the Promise client. Needs the npm
 * registry.
 */
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { start } from "../src/testing/MockClinicalServer.js"

const run = promisify(execFile)
const here = Path.resolve(import.meta.dirname, "..")

/** A fenced block's first line starting with `startsWith`, in effect4/README.md. */
const readmeLine = (startsWith: string): string => {
  const line = Fs.readFileSync(Path.join(here, "README.md"), "utf8").split("\n").find((text) =>
    text.startsWith(startsWith)
  )
  if (line === undefined) throw new Error(`effect4/README.md has no line starting with ${startsWith}`)
  return line.trim()
}

/** The README's program: the ts block of its "Use it in a backend" section, as a user pastes it. */
const readmeProgram = (): string => {
  const readme = Fs.readFileSync(Path.join(here, "README.md"), "utf8")
  const match = /```ts\n([\s\S]*?)\n```/.exec(readme.slice(readme.indexOf("## Use it in a backend")))
  if (match === null) throw new Error("effect4/README.md has no program in its Use it in a backend section")
  return match[1]!
}

/** A Promise program over the client and the mock, as code without Effect writes it. */
const PROMISE_PROGRAM = `
import { createClinicalClient, ApiError } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"

const mock = await MockClinicalServer.start()
const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
const { medications } = await clinical.medications(mock.persons[1].personUid)
const error = await clinical.medications("nobody").catch((e) => e)
console.log("promise", medications.length, error instanceof ApiError, error._tag)
await clinical.close()
await mock.close()
`

const STRICT_TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: false,
    noEmit: true,
    types: ["node"]
  },
  include: ["main.ts"]
}

/** Every package installed under `directory`'s node_modules (nested ones included): its name and version. */
const installed = (directory: string): Array<{ readonly name: string; readonly version: string }> => {
  const found: Array<{ readonly name: string; readonly version: string }> = []
  const visit = (modules: string) => {
    if (!Fs.existsSync(modules)) return
    for (const entry of Fs.readdirSync(modules)) {
      if (entry.startsWith(".")) continue
      const folders = entry.startsWith("@")
        ? Fs.readdirSync(Path.join(modules, entry)).map((name) => Path.join(modules, entry, name))
        : [Path.join(modules, entry)]
      for (const folder of folders) {
        const manifest = Path.join(folder, "package.json")
        if (!Fs.existsSync(manifest)) continue
        const { name, version } = JSON.parse(Fs.readFileSync(manifest, "utf8")) as { name: string; version: string }
        found.push({ name, version })
        visit(Path.join(folder, "node_modules"))
      }
    }
  }
  visit(Path.join(directory, "node_modules"))
  return found
}

/** Packages of the Effect 3 line: Effect 3 itself, and its ecosystem's 0.x packages (`@effect/platform` ...). */
const effect3Packages = (directory: string) =>
  installed(directory).filter(({ name, version }) =>
    (name === "effect" && !version.startsWith("4.")) || (name.startsWith("@effect/") && version.startsWith("0."))
  )

describe("a fresh project that installs the packed Effect 4 line", () => {
  const made: Array<string> = []
  let tarball = ""
  let onEffect4 = ""
  let withoutEffect = ""
  let setupFailed: unknown
  afterAll(() => {
    for (const directory of made) Fs.rmSync(directory, { recursive: true, force: true })
  }, 120_000)

  /** A new project with a package.json of type module. */
  const project = (prefix: string) => {
    const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
    made.push(directory)
    Fs.writeFileSync(
      Path.join(directory, "package.json"),
      JSON.stringify({ name: "fresh", private: true, type: "module" })
    )
    return directory
  }

  beforeAll(async () => {
    try {
      const packed = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-4-pack-"))
      made.push(packed)
      // `npm pack` builds the package first (its prepack script).
      const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", packed], {
        cwd: here,
        timeout: 180_000
      })
      tarball = Path.join(
        packed,
        (JSON.parse(stdout.slice(stdout.indexOf("["))) as Array<{ filename: string }>)[0]!.filename
      )
      const [npm, ...args] = readmeLine("npm install effect-clinical@^4").split(/\s+/).map((word) =>
        word.startsWith("effect-clinical@") ? tarball : word
      )
      const effect4 = project("effect-clinical-4-fresh-")
      const none = project("effect-clinical-4-noeffect-")
      await Promise.all([
        run(npm!, args, { cwd: effect4, timeout: 240_000 }),
        run("npm", ["install", tarball], { cwd: none, timeout: 240_000 })
      ])
      onEffect4 = effect4
      withoutEffect = none
    } catch (error) {
      setupFailed = error
    }
  }, 420_000)

  /** A project, or the setup's failure: a test that cannot set up must fail. */
  const ready = (directory: string): string => {
    if (setupFailed !== undefined) throw setupFailed
    expect(directory, "the install failed").not.toBe("")
    return directory
  }

  it("installs with exactly the README's line: Effect 4, and no package of the Effect 3 line anywhere", () => {
    const directory = ready(onEffect4)
    const packages = installed(directory)
    expect(packages.find(({ name }) => name === "effect-clinical")?.version).toMatch(/^4\./)
    expect(packages.filter(({ name }) => name === "effect").map(({ version }) => version)).toEqual([
      expect.stringMatching(/^4\.1\./)
    ])
    expect(effect3Packages(directory)).toEqual([])
  })

  it("runs the README's program as pasted, against the mock on loopback", async () => {
    const directory = ready(onEffect4)
    const mock = await start()
    try {
      Fs.writeFileSync(Path.join(directory, "main.mjs"), readmeProgram())
      const person = mock.persons[0]!
      const env = { PATH: process.env.PATH ?? "", CLINICAL_BASE_URL: mock.url, CLINICAL_PERSON_UID: person.personUid }
      const { stdout } = await run(process.execPath, ["main.mjs"], {
        cwd: directory,
        timeout: 60_000,
        env: { ...env, CLINICAL_APPLICATION_ID: mock.applicationId }
      })
      const lines = stdout.trim().split("\n")
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) {
        expect(person.medications.some((m) => line === `${m.Name} ${m.Strength}: ${m.Instructions}`), line).toBe(true)
      }
      // Refused: stdout stays empty, the error goes to stderr on one line, exit 1.
      const refused = await run(process.execPath, ["main.mjs"], {
        cwd: directory,
        timeout: 60_000,
        env: { ...env, CLINICAL_APPLICATION_ID: "00000000-0000-4000-8000-000000000000" }
      }).then(
        () => ({ code: 0, stdout: "", stderr: "" }),
        (error: { code: number; stdout: string; stderr: string }) => error
      )
      expect(refused.code).toBe(1)
      expect(refused.stdout).toBe("")
      expect(refused.stderr).toMatch(/^error: Unauthorized: /m)
    } finally {
      await mock.close()
    }
  }, 60_000)

  it("type-checks the README's program strictly, skipLibCheck off, against the published declarations", async () => {
    const directory = Path.join(ready(onEffect4), "strict")
    Fs.mkdirSync(directory)
    Fs.writeFileSync(Path.join(directory, "package.json"), JSON.stringify({ type: "module" }))
    Fs.writeFileSync(Path.join(directory, "tsconfig.json"), JSON.stringify(STRICT_TSCONFIG))
    Fs.writeFileSync(Path.join(directory, "main.ts"), readmeProgram())
    // The project's own packages, and this repository's TypeScript and Node types (a TypeScript project has both).
    Fs.symlinkSync(Path.join(onEffect4, "node_modules"), Path.join(directory, "node_modules"))
    Fs.mkdirSync(Path.join(onEffect4, "node_modules/@types"), { recursive: true })
    Fs.cpSync(Path.join(here, "node_modules/@types/node"), Path.join(onEffect4, "node_modules/@types/node"), {
      recursive: true
    })
    const tsc = Path.join(here, "node_modules/typescript/bin/tsc")
    const checked = await run(process.execPath, [tsc, "-p", "."], { cwd: directory }).then(
      () => ({ ok: true, out: "" }),
      (error: { stdout?: string }) => ({ ok: false, out: error.stdout ?? "" })
    )
    expect(checked.out).toBe("")
    expect(checked.ok).toBe(true)
  }, 120_000)

  it("runs the Promise client and the mock in the project on Effect 4", async () => {
    const directory = ready(onEffect4)
    Fs.writeFileSync(Path.join(directory, "promise.mjs"), PROMISE_PROGRAM)
    const { stdout } = await run(process.execPath, ["promise.mjs"], { cwd: directory, timeout: 60_000 })
    expect(stdout.trim()).toMatch(/^promise \d+ true ApiError$/)
  }, 60_000)

  it(
    "the effect-clinical executable runs in the project on Effect 4: its version is this package's, token works",
    async () => {
      const directory = ready(onEffect4)
      const bin = Path.join(directory, "node_modules/.bin/effect-clinical")
      // The same bundle as the Effect 3 line's executable, carried by this package.
      expect(Fs.realpathSync(bin)).toBe(
        Path.join(directory, "node_modules/effect-clinical/dist/bin/effect-clinical.js")
      )
      const version = JSON.parse(Fs.readFileSync(Path.join(here, "package.json"), "utf8")).version as string
      expect((await run(bin, ["--version"], { cwd: directory, timeout: 60_000 })).stdout.trim()).toBe(version)
      const mock = await start()
      try {
        const env = {
          PATH: process.env.PATH ?? "",
          CLINICAL_BASE_URL: mock.url,
          CLINICAL_APPLICATION_ID: mock.applicationId
        }
        const token = await run(bin, ["token", "--json"], { cwd: directory, timeout: 60_000, env })
        expect(JSON.parse(token.stdout)).toMatchObject({ generation: 1, lifetimeSeconds: 3600 })
        expect((await mock.counters()).tokenRequests).toBe(1)
      } finally {
        await mock.close()
      }
    },
    60_000
  )

  it("in a project with no Effect, the tarball alone brings Effect 4 and the Promise client runs", async () => {
    const directory = ready(withoutEffect)
    expect(installed(directory).filter(({ name }) => name === "effect").map(({ version }) => version)).toEqual([
      expect.stringMatching(/^4\.1\./)
    ])
    expect(effect3Packages(directory)).toEqual([])
    Fs.writeFileSync(Path.join(directory, "promise.mjs"), PROMISE_PROGRAM)
    const { stdout } = await run(process.execPath, ["promise.mjs"], { cwd: directory, timeout: 60_000 })
    expect(stdout.trim()).toMatch(/^promise \d+ true ApiError$/)
  }, 60_000)
})
