/**
 * What makes a batch resumable, as pure functions: the checkpoint's checks, the results line's
 * form, and reading the results file back (a line cut by a crash does not count).
 */
import { describe, expect, it } from "@effect/vitest"
import { type Checkpoint, doneOf, mismatch, readLine, resultLine } from "../src/cli/checkpoint.js"

const wanted: Checkpoint = {
  version: 1,
  operation: "medications",
  inputSha256: "ab".repeat(32),
  startDate: null,
  endDate: "2024-12-31"
}

describe("checkpoint: resuming is refused unless it is the same batch", () => {
  it("the same batch resumes", () => {
    expect(mismatch({ ...wanted }, wanted)).toBeUndefined()
  })

  const refused: ReadonlyArray<readonly [string, unknown, string]> = [
    ["not an object", "text", "the checkpoint file is not one this version wrote"],
    ["null", null, "the checkpoint file is not one this version wrote"],
    ["another version", { ...wanted, version: 2 }, "the checkpoint file is not one this version wrote"],
    ["another input", { ...wanted, inputSha256: "cd".repeat(32) }, "the persons file changed since the batch started"],
    [
      "another operation",
      { ...wanted, operation: "ethnicities" },
      "the batch was started for ethnicities, not medications"
    ],
    ["another start date", { ...wanted, startDate: "2024-01-01" }, "the batch was started with another date range"],
    ["another end date", { ...wanted, endDate: null }, "the batch was started with another date range"]
  ]
  for (const [name, found, reason] of refused) {
    it(`${name}: ${reason}`, () => {
      expect(mismatch(found, wanted)).toBe(reason)
    })
  }
})

describe("checkpoint: results lines", () => {
  it("a line is JSON with its index first, ASCII only (a character is a byte), ending in a newline", () => {
    const line = resultLine(7, { outcome: "Success", items: [{ Name: "Émile ✓ 𝄞" }] })
    expect(line.endsWith("\n")).toBe(true)
    expect(line.startsWith(`{"index":7,"outcome":"Success",`)).toBe(true)
    expect(/^[\x20-\x7e]*\n$/.test(line)).toBe(true)
    expect(Buffer.byteLength(line)).toBe(line.length)
    expect(JSON.parse(line)).toEqual({ index: 7, outcome: "Success", items: [{ Name: "Émile ✓ 𝄞" }] })
  })

  it("reads back the index and whether it failed; anything else is not a results line", () => {
    expect(readLine(resultLine(12, { outcome: "Failure", error: {} }).trimEnd())).toEqual({ index: 12, failed: true })
    expect(readLine(resultLine(0, { outcome: "Success", items: [] }).trimEnd())).toEqual({ index: 0, failed: false })
    expect(readLine(`{"index":3,"outcome":"Skipped"}`)).toBeUndefined()
    expect(readLine(`{"outcome":"Success","index":3}`)).toBeUndefined()
    expect(readLine(`x{"index":3,"outcome":"Success"}`)).toBeUndefined()
    expect(readLine("")).toBeUndefined()
  })
})

describe("checkpoint: what the results file says is done", () => {
  const lines = [
    resultLine(2, { outcome: "Success", items: [] }),
    resultLine(0, { outcome: "Failure", error: {} }),
    resultLine(5, { outcome: "Success", items: [] })
  ]

  it("every whole line's index, the failures counted, and the bytes of whole lines", () => {
    const text = lines.join("")
    expect(doneOf(text)).toEqual({ indices: new Set([2, 0, 5]), failed: 1, completeBytes: text.length })
  })

  it("a last line cut by a crash does not count, and the bytes stop before it", () => {
    const whole = lines.slice(0, 2).join("")
    const done = doneOf(whole + lines[2]!.slice(0, 20))
    expect(done).toEqual({ indices: new Set([2, 0]), failed: 1, completeBytes: whole.length })
  })

  it("an index written twice counts once, a failure too; an empty file is nothing done", () => {
    const twice = lines[1]! + lines[1]! + lines[0]!
    expect(doneOf(twice)).toEqual({ indices: new Set([0, 2]), failed: 1, completeBytes: twice.length })
    expect(doneOf("")).toEqual({ indices: new Set(), failed: 0, completeBytes: 0 })
    expect(doneOf("no newline at all")).toEqual({ indices: new Set(), failed: 0, completeBytes: 0 })
  })
})
