/**
 * The streaming JSON check `collect` reads results lines with: it must agree with `JSON.parse` on
 * every text, whole or cut, glued or flipped, and give the same answer however the bytes are split.
 */
import { describe, expect, it } from "vitest"
import { isJson, JsonSyntax, MAX_NESTING } from "../core/jsonSyntax.js"
// The same cases on every run.
import { seededRandom as random } from "../core/testing/seeded.js"

const parses = (text: Buffer): boolean => {
  try {
    JSON.parse(text.toString("utf8"))
    return true
  } catch {
    return false
  }
}

const valueOf = (next: () => number, depth: number): unknown => {
  const pick = Math.floor(next() * (depth > 3 ? 5 : 7))
  switch (pick) {
    case 0:
      return Math.round((next() - 0.5) * 1e6) / (next() < 0.5 ? 1 : 1000)
    case 1:
      return ["", "a\"b", "line\nbreak", "tab\t\\", "\u0001ctl", "é ✓ 𝄞", "x".repeat(40)][Math.floor(next() * 7)]
    case 2:
      return next() < 0.5
    case 3:
      return null
    case 4:
      return next() * 1e-9
    case 5:
      return Array.from({ length: Math.floor(next() * 4) }, () => valueOf(next, depth + 1))
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(next() * 4) }, (_, i) => [`k${i}"\\`, valueOf(next, depth + 1)])
      )
  }
}

// Generous: tens of thousands of texts, many times slower under Stryker's instrumentation.
describe("JsonSyntax", { timeout: 120_000 }, () => {
  it("agrees with JSON.parse on 20,000 texts: whole values, cut, glued, flipped, with odd spacing", () => {
    const next = random(7)
    const noise = Buffer.from(" \t\r\n{}[]:,\"\\-+.eE0123456789tfnrula\u0000\u007f")
    let valid = 0
    for (let n = 0; n < 20_000; n++) {
      const whole = Buffer.from(JSON.stringify(valueOf(next, 0), null, n % 3 === 0 ? 1 : undefined))
      let text: Buffer = whole
      switch (n % 5) {
        case 1:
          text = whole.subarray(0, Math.floor(next() * whole.length))
          break
        case 2:
          text = Buffer.concat([whole.subarray(0, Math.floor(next() * whole.length)), whole])
          break
        case 3: {
          text = Buffer.from(whole)
          text[Math.floor(next() * text.length)] = noise[Math.floor(next() * noise.length)]!
          break
        }
        case 4:
          text = Buffer.concat([Buffer.from(" \n"), whole, Buffer.from("\t ")])
          break
      }
      const expected = parses(text)
      if (expected) valid++
      expect({ text: text.toString("latin1"), valid: isJson(text) }).toEqual({
        text: text.toString("latin1"),
        valid: expected
      })
    }
    // Both kinds were tried many times.
    expect(valid).toBeGreaterThan(5_000)
    expect(valid).toBeLessThan(18_000)
  })

  it("answers the same whatever the pieces the bytes come in", () => {
    const next = random(11)
    for (let n = 0; n < 2_000; n++) {
      const whole = Buffer.from(JSON.stringify(valueOf(next, 0)))
      const text = n % 2 === 0 ? whole : whole.subarray(0, Math.floor(next() * whole.length))
      const syntax = new JsonSyntax()
      let ok = true
      for (let at = 0; at < text.length && ok;) {
        const to = Math.min(text.length, at + 1 + Math.floor(next() * 7))
        ok = syntax.feed(text, at, to)
        at = to
      }
      expect(ok && syntax.end()).toBe(isJson(text))
    }
  })

  it("the cases a cut or glued results line makes", () => {
    const line = Buffer.from("{\"index\":5,\"outcome\":\"Success\",\"items\":[{\"Name\":\"Lisinopril\"}]}")
    expect(isJson(line)).toBe(true)
    // Cut anywhere: never whole.
    for (let cut = 0; cut < line.length; cut++) expect(isJson(line.subarray(0, cut))).toBe(false)
    // A cut line with the next glued on: never whole, wherever the cut fell.
    for (let cut = 1; cut < line.length; cut++) {
      expect(isJson(Buffer.concat([line.subarray(0, cut), line]))).toBe(false)
    }
    // Two whole values: not one.
    expect(isJson(Buffer.concat([line, line]))).toBe(false)
  })

  it("nesting beyond its bound is refused, in constant memory, however deep", () => {
    const deep = (n: number) => Buffer.from("[".repeat(n) + "]".repeat(n))
    expect(isJson(deep(MAX_NESTING))).toBe(true)
    expect(isJson(deep(MAX_NESTING + 1))).toBe(false)
    expect(isJson(Buffer.from("[".repeat(5_000_000)))).toBe(false)
  })

  it("numbers, literals and escapes as JSON has them", () => {
    for (const text of ["0", "-0", "1.5e-3", "12E+4", "-1", "true", "false", "null", "\"\\u00e9\\n\"", "[]", "{}"]) {
      expect([text, isJson(Buffer.from(text))]).toEqual([text, true])
    }
    for (
      const text of ["01", "-", "1.", ".5", "1e", "+1", "tru", "nul", "\"\\x\"", "\"\\u12g4\"", "[1,]", "{\"a\"}", ""]
    ) {
      expect([text, isJson(Buffer.from(text))]).toEqual([text, false])
    }
  })
})
