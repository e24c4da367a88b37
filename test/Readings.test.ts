/**
 * The pieces the redaction reads a text with, driven directly: the escapes it decodes (what is one,
 * what only looks like one), the readings of a text in the order they are made, the units' buffers
 * and the pool they are kept in (bounded, and reused), and which characters are separators.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Codes, entityEscaped, type Escape, jsonEscaped, percentEncoded } from "../core/redaction/escapes.js"
import { fold, foldedOf, forEachReading, isSeparator, release, Units } from "../core/redaction/readings.js"
import { scrub } from "../src/internal/redaction/redaction.js"

const codesOf = (text: string): Codes => ({ codes: Array.from(text, (c) => c.charCodeAt(0)), length: text.length })

const unitsOf = (text: string): Units => {
  const units = new Units(1)
  for (let at = 0; at < text.length; at++) units.push(text.charCodeAt(at), at, at + 1)
  return units
}

describe("escapes", () => {
  it("a buffer longer than its length: an escape cut by the length is not read past it", () => {
    const buffer = { codes: Uint16Array.from("%C3%A9\\u0041", (c) => c.charCodeAt(0)) }
    expect(percentEncoded({ ...buffer, length: 6 }, 0)).toEqual([0xe9, 6])
    expect(percentEncoded({ ...buffer, length: 3 }, 0)).toBeUndefined()
    expect(percentEncoded({ ...buffer, length: 5 }, 0)).toBeUndefined()
    expect(jsonEscaped({ ...buffer, length: 11 }, 6)).toBeUndefined()
    expect(jsonEscaped({ ...buffer, length: 12 }, 6)).toEqual([0x41, 6])
  })

  const references: ReadonlyArray<readonly [string, Escape | undefined]> = [
    ["&amp;", [0x26, 5]],
    ["&AMP;", [0x26, 5]],
    ["&QUOT;", [0x22, 6]],
    ["&Hat;", [0x5e, 5]],
    ["&lowbar;", [0x5f, 8]], // the longest names, six letters
    ["&percnt;", [0x25, 8]],
    ["&commat;", [0x40, 8]],
    ["&#39;", [0x27, 5]],
    ["&#x3D;", [0x3d, 6]],
    ["&#X3D;", [0x3d, 6]],
    ["&#x10FFFF;", [0x10ffff, 10]], // the last code point
    ["&#1114111;", [0x10ffff, 10]],
    ["&#0000065;", [0x41, 10]], // seven decimal digits
    ["&#x000041;", [0x41, 10]], // six hexadecimal digits
    // What only looks like one.
    ["&#x110000;", undefined], // past the last code point
    ["&#1114112;", undefined],
    ["&#00000065;", undefined], // more digits than a reference has
    ["&#x0000041;", undefined],
    ["&#39", undefined], // no semicolon
    ["&#39x;", undefined],
    ["&#;", undefined], // no digit
    ["&#x;", undefined],
    ["&foo;", undefined], // no such name
    ["&amp", undefined],
    ["&a1;", undefined],
    ["&;", undefined],
    ["&percnts;", undefined], // longer than any name
    ["&", undefined]
  ]
  for (const [text, escape] of references) {
    it(`the reference ${JSON.stringify(text)} is ${escape === undefined ? "none" : `U+${escape[0].toString(16)}`}`, () => {
      expect(entityEscaped(codesOf(text), 0)).toEqual(escape)
      // ... read where it starts, and only there.
      expect(entityEscaped(codesOf(`x${text}`), 1)).toEqual(escape)
      expect(entityEscaped(codesOf(`x${text.slice(1)}`), 0)).toBeUndefined()
    })
  }

  it("a reference read inside a text", () => {
    expect(scrub("x tok&#x2B;en&AMP;42 y", ["tok+en&42"])).toBe("x <redacted> y")
    expect(scrub("x a&percnt;b&Hat;cd y", ["a%b^cd"])).toBe("x <redacted> y")
  })
})

describe("the readings of a text, in the order they are made", () => {
  const readingsOf = (text: string) => {
    const readings: Array<readonly [string, boolean]> = []
    forEachReading(text, (units, asWritten) => readings.push([units.text(), asWritten]))
    return readings
  }

  it("a text with no escape is read once, as written", () => {
    expect(readingsOf("plain text")).toEqual([["plain text", true]])
    expect(readingsOf("")).toEqual([["", true]])
  })

  it("what only looks like an escape makes no reading of its own", () => {
    expect(readingsOf("100%zz")).toEqual([["100%zz", true]])
    expect(readingsOf("a\\b %zz &x")).toEqual([["a\\b %zz &x", true]])
  })

  it("one kind of escape: the rounds alone, each decoding what the one before made", () => {
    expect(readingsOf("a%41b")).toEqual([["a%41b", true], ["aAb", false]])
    expect(readingsOf("a%2541b")).toEqual([["a%2541b", true], ["a%41b", false], ["aAb", false]])
  })

  it("at most four rounds", () => {
    expect(readingsOf("%252525252541").map(([text]) => text)).toEqual([
      "%252525252541",
      "%2525252541",
      "%25252541",
      "%252541",
      "%2541"
    ])
  })

  it("two kinds: each alone first (one that decodes nothing makes no reading), then the rounds", () => {
    expect(readingsOf("p\\u0041%2Fq")).toEqual([
      ["p\\u0041%2Fq", true],
      ["pA%2Fq", false],
      ["p\\u0041/q", false],
      ["pA/q", false]
    ])
    expect(readingsOf("a\\/b%zz")).toEqual([["a\\/b%zz", true], ["a/b%zz", false], ["a/b%zz", false]])
  })

  it("a secret holding what looks like an escape of the other kind is found in the reading of one kind alone", () => {
    // Decoded all at once, neither is there any more: the secret's own look-alike went too.
    expect(scrub("x ab%41\\/cd y", ["ab%41/cd"])).toBe("x <redacted> y")
    expect(scrub("x p\\u0041%2Fq-secret y", ["p\\u0041/q-secret"])).toBe("x <redacted> y")
  })
})

describe("units and their pool", () => {
  it("units grow as they are pushed, keeping every unit and where it stands", () => {
    const text = "x".repeat(15) + "the units of a text longer than sixteen"
    const units = unitsOf(text)
    expect(units.length).toBe(text.length)
    expect(units.text()).toBe(text)
    expect(Array.from(units.starts.subarray(0, 3))).toEqual([0, 1, 2])
    expect(units.ends[text.length - 1]).toBe(text.length)
  })

  it("reserving keeps the units there, and what fits already allocates nothing", () => {
    const units = unitsOf("twenty units of text")
    const codes = units.codes
    units.reserve(4)
    units.reserve(codes.length)
    expect(units.codes).toBe(codes)
    units.reserve(codes.length + 1)
    expect(units.codes).not.toBe(codes)
    expect(units.text()).toBe("twenty units of text")
  })

  it("units given back are taken again for the next reading", () => {
    const source = unitsOf("Reused")
    const first = foldedOf(source, false)
    expect(first.text()).toBe("reused")
    release(first)
    const second = foldedOf(source, false)
    expect(second).toBe(first)
    expect(second.text()).toBe("reused")
    release(second)
  })

  it("every reading's units go back to the pool once read", () => {
    const read: Array<Units> = []
    forEachReading("a%2541b", (units) => read.push(units))
    expect(read).toHaveLength(3)
    const again = read.map(() => foldedOf(unitsOf("x"), false))
    expect(new Set(again)).toEqual(new Set(read))
    for (const units of again) release(units)
  })

  it("the pool keeps at most 16 buffers", () => {
    const source = unitsOf("pooled")
    const taken = Array.from({ length: 20 }, () => foldedOf(source, false))
    for (const units of taken) release(units)
    const again = Array.from({ length: 20 }, () => foldedOf(source, false))
    expect(again.filter((units) => taken.includes(units))).toHaveLength(16)
    for (const units of again) release(units)
  })

  it("the pool keeps a buffer of up to 2^18 units, not a larger one", () => {
    const atBound = foldedOf(unitsOf("b".repeat(1 << 18)), false)
    expect(atBound.codes.length).toBe(1 << 18)
    release(atBound)
    const reused = foldedOf(unitsOf("small"), false)
    expect(reused).toBe(atBound)
    release(reused)

    const larger = foldedOf(unitsOf("b".repeat((1 << 18) + 1)), false)
    release(larger)
    const next = foldedOf(unitsOf("small"), false)
    expect(next).not.toBe(larger)
    release(next)
  })
})

describe("separators", () => {
  it("a hyphen, a space (folded to +) and the dashes U+2010 to U+2015, nothing else", () => {
    for (const unit of [0x2d, 0x2b, 0x2010, 0x2013, 0x2015]) expect(isSeparator(unit)).toBe(true)
    for (const unit of [0x20, 0x2c, 0x2e, 0x200f, 0x2016, 0x2212]) expect(isSeparator(unit)).toBe(false)
  })

  it("a separated secret echoed with the first or the last of those dashes, or with none", () => {
    expect(scrub("x EW\u20102719\u2010KQ y", ["EW-2719-KQ"])).toBe("x <redacted> y")
    expect(scrub("x EW\u20152719\u2015KQ y", ["EW-2719-KQ"])).toBe("x <redacted> y")
    expect(scrub("x EW\u20162719\u2016KQ y", ["EW-2719-KQ"])).toBe("x EW\u20162719\u2016KQ y")
  })

  it("no character folds to several units one of which is a separator", () => {
    for (let unit = 0; unit < 0x10000; unit++) {
      const folded = fold(unit)
      if (typeof folded !== "number") expect(folded.filter(isSeparator)).toEqual([])
    }
  })

  it("without its separators, a secret keeps the letters its folding makes several of", () => {
    // ß folds to ss: the secret and the text are compared as "strasse12ab" both.
    expect(scrub("x STRASSE12AB y", ["Straße-12-AB"])).toBe("x <redacted> y")
    expect(scrub("x STRAE12AB y", ["Straße-12-AB"])).toBe("x STRAE12AB y")
  })
})
