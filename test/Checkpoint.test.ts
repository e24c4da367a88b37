/**
 * What makes a batch resumable, as pure functions: the checkpoint's checks, the results line's
 * form, and reading the results file back (a line cut by a crash does not count).
 */
import { describe, expect, it } from "@effect/vitest"
import { type Checkpoint, isFinal, keptLine, mismatch, readLine, resultLine } from "../core/checkpoint.js"
import { hideTypedValues } from "../src/cli/outcome.js"

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

describe("checkpoint: which results lines a resumed batch keeps", () => {
  const at = { operation: "medications", method: "POST", url: "http://h/p" }
  const final: ReadonlyArray<readonly [string, object]> = [
    ["the service's Success:false for the person", {
      _tag: "ApiError",
      ...at,
      status: 400,
      errorType: "PersonNotFound"
    }],
    ["a 400 for the person", { _tag: "BadRequest", ...at, status: 400 }],
    ["an answer that cannot be read", { _tag: "ResponseDecodeError", ...at, status: 200 }],
    ["an unexpected status", { _tag: "UnexpectedStatus", ...at, status: 404 }],
    ["a refused PersonUid", { _tag: "InvalidRequest", operation: "medications", field: "personUid" }]
  ]
  const retried: ReadonlyArray<readonly [string, object]> = [
    ["a transport failure", { _tag: "TransportError", ...at, reason: "Network" }],
    ["a 5xx", { _tag: "ServerError", ...at, status: 503 }],
    ["a 429", { _tag: "RateLimited", ...at, status: 429 }],
    ["refused credentials", { _tag: "Unauthorized", ...at, status: 401 }],
    ["an expired token twice", { _tag: "TokenExpired", ...at, status: 419 }],
    ["the token endpoint's 400", { _tag: "BadRequest", ...at, operation: "token", status: 400 }],
    ["the token endpoint's Success:false", { _tag: "ApiError", ...at, operation: "token", status: 200 }],
    ["a refused date range", { _tag: "InvalidRequest", operation: "medications", field: "startDate" }],
    ["no error at all", {}]
  ]
  for (const [name, error] of final) {
    it(`kept, done for good: ${name}`, () => {
      expect(isFinal(error)).toBe(true)
      expect(keptLine(resultLine(4, { outcome: "Failure", error }).trimEnd())).toEqual({ index: 4, failed: true })
    })
  }
  for (const [name, error] of retried) {
    it(`dropped, sent again: ${name}`, () => {
      expect(isFinal(error)).toBe(false)
      expect(keptLine(resultLine(4, { outcome: "Failure", error }).trimEnd())).toBeUndefined()
    })
  }

  it("a success is kept; a line that is not ours, or cut, is not", () => {
    expect(keptLine(resultLine(9, { outcome: "Success", items: [] }).trimEnd())).toEqual({ index: 9, failed: false })
    expect(keptLine(`{"index":9,"outcome":"Failure","error":{"_tag":"ApiE`)).toBeUndefined()
    expect(keptLine("garbage")).toBeUndefined()
    expect(isFinal(null)).toBe(false)
    expect(isFinal("ApiError")).toBe(false)
  })
})

describe("hideTypedValues (from review)", () => {
  it("keeps the names an error quotes, and hides from the first quoted value to the last quote", () => {
    expect(hideTypedValues("Received unknown argument: '--foo'. Did you mean '--format'?"))
      .toBe("Received unknown argument: '--foo'. Did you mean '--format'?")
    expect(hideTypedValues("Path '/nope/a'SECRET' must exist")).toBe("Path '<hidden>' must exist")
    expect(hideTypedValues("Path '/nope/a\nSECRET' must exist")).toBe("Path '<hidden>' must exist")
    expect(hideTypedValues("Expected '--out' but got 'SECRET'")).toBe("Expected '--out' but got '<hidden>'")
    expect(hideTypedValues("it's a value")).toBe("it'<hidden>")
    expect(hideTypedValues("nothing quoted")).toBe("nothing quoted")
  })
})
