/**
 * A line below its Node.js floor (core/nodeFloor.ts): the Effect 4 line, imported on a Node.js
 * older than its `engines` say (22.19), throws one clear error naming both versions, from each of
 * its entry points, instead of every call dying with Effect 4's `TypeError: Cannot read properties
 * of undefined (reading 'bind')`. The Effect 3 line imports and calls on the same Node. Run in a
 * child process on the Node.js this suite runs on: CI runs it on Node 20 (below the Effect 4
 * line's floor) and on Node 26 (above it).
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { belowFloorMessage, FLOORS, isBelow, versionOf } from "../core/nodeFloor.js"

const root = Path.resolve(import.meta.dirname, "..")
const effect4 = Path.join(root, "effect4")

describe("core/nodeFloor", () => {
  it("reads versions as Node writes them, with or without the v, a pre-release after them", () => {
    expect(versionOf("v20.20.2")).toEqual([20, 20, 2])
    expect(versionOf("22.19.0")).toEqual([22, 19, 0])
    expect(versionOf("26.0.0-nightly20261201abcdef")).toEqual([26, 0, 0])
    expect(versionOf("22.19")).toBeUndefined()
    expect(versionOf("latest")).toBeUndefined()
  })

  it("below is below by major, then minor, then patch; the floor itself and anything after it are not", () => {
    for (const below of ["20.20.2", "22.18.9", "22.9.0", "21.99.99", "22.19.0".replace("19.0", "18.99"), "v0.12.0"]) {
      expect(isBelow(below, "22.19.0"), below).toBe(true)
    }
    for (const fine of ["22.19.0", "22.19.1", "22.20.0", "23.0.0", "24.22.3", "v26.12.1", "100.0.0"]) {
      expect(isBelow(fine, "22.19.0"), fine).toBe(false)
    }
    // A version that does not read as one is let through (a new form), never refused by mistake.
    expect(isBelow("unknown", "22.19.0")).toBe(false)
  })

  it("the message names the package, the version running, the version needed, and what to use instead", () => {
    expect(belowFloorMessage("p@4", "v20.20.2", "22.19.0", "p@3")).toBe(
      "p@4 needs Node.js 22.19.0 or later, and this is Node.js 20.20.2. Run it on Node.js 22.19.0 or later, or use p@3."
    )
  })

  it("each line's floor is its package.json's engines", () => {
    const engines = (dir: string) => JSON.parse(Fs.readFileSync(Path.join(dir, "package.json"), "utf8")).engines.node
    expect(engines(effect4)).toBe(`>=${FLOORS.effect4}`)
    expect(engines(root)).toMatch(new RegExp(`^\\^${FLOORS.effect3.replaceAll(".", "\\.")} \\|\\| `))
  })
})

/** Imports `module` (a source file, through tsx) on this suite's Node.js in a process of its own, then runs `then`. */
const importIn = (cwd: string, module: string, then = "") =>
  spawnSync(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `const m = await import(${JSON.stringify(module)}); ${then}; console.log("imported")`
    ],
    { cwd, encoding: "utf8", timeout: 60_000, env: { ...process.env, NODE_OPTIONS: "" } }
  )

const below = isBelow(process.versions.node, FLOORS.effect4)

describe(`the Effect 4 line on this Node.js (${process.version}, ${below ? "below" : "at or above"} its floor)`, () => {
  for (const entry of ["index", "promise", "testing", "bullmq"]) {
    it(`importing its ${entry} entry point ${below ? "throws one clear error naming both versions" : "works"}`, () => {
      const result = importIn(effect4, `./src/${entry}.ts`)
      if (below) {
        expect(result.status).not.toBe(0)
        expect(result.stdout).toBe("")
        expect(result.stderr).toContain(
          `Error: effect-clinical@4 (the Effect 4 line) needs Node.js ${FLOORS.effect4} or later, and this is Node.js ${process.versions.node}. ` +
            `Run it on Node.js ${FLOORS.effect4} or later, or use effect-clinical@3 (the Effect 3 line), which runs on Node.js ${FLOORS.effect3} or later.`
        )
        expect(result.stderr).not.toContain("reading 'bind'")
      } else {
        expect(result.stderr).toBe("")
        expect(result.stdout).toBe("imported\n")
      }
    }, 60_000)
  }
})

describe(`the Effect 3 line on this Node.js (${process.version})`, () => {
  it("imports and makes a call against its mock in memory", () => {
    const result = importIn(
      root,
      "./src/index.ts",
      `const { Effect, Layer } = await import("effect");
       const { MockClinicalServer } = await import("./src/testing.ts");
       const client = m.ClinicalClient.layer({ baseUrl: "https://openapi.example.test", applicationId: MockClinicalServer.demoApplicationId });
       const program = m.MedicationService.get(MockClinicalServer.fixturePersons[0].personUid).pipe(
         Effect.provide(client.pipe(Layer.provide(MockClinicalServer.layerTransport()))));
       const { medications } = await Effect.runPromise(program);
       if (medications.length === 0) throw new Error("no medications")`
    )
    expect(result.stderr).toBe("")
    expect(result.stdout).toBe("imported\n")
  }, 60_000)
})
