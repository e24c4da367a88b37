/**
 * The one function that scrubs secrets out of text we did not write: every form a server plausibly
 * echoes a value in, every occurrence, the search limit and the cap applied after scrubbing; the
 * redactor, and server text searched within one budget.
 */
import { describe, expect, it } from "@effect/vitest"
import { Redacted } from "effect"
import { serverText } from "../src/internal/call/response.js"
import {
  MAX_SEARCHED,
  MAX_SECRET,
  MAX_TEXT,
  scrub,
  type Scrubber,
  scrubber
} from "../src/internal/redaction/redaction.js"
import { exact, expectLinear, GUID, PASS, redactEvery, TOKEN } from "./support/redactionFixtures.js"

describe("scrub", () => {
  const forms: ReadonlyArray<readonly [string, string, string]> = [
    ["a GUID as sent", GUID, GUID],
    ["a GUID in lower case (.NET's default)", GUID, GUID.toLowerCase()],
    ["a GUID without hyphens", GUID, GUID.replace(/-/g, "")],
    ["a GUID without hyphens, lower case", GUID, GUID.replace(/-/g, "").toLowerCase()],
    ["a GUID given lower case, echoed upper case", GUID.toLowerCase(), GUID],
    ["a GUID percent-encoded", GUID, encodeURIComponent(GUID)],
    ["a token as sent", TOKEN, TOKEN],
    ["a token in another case", TOKEN, TOKEN.toUpperCase()],
    ["a token JSON-escaped with \\/", TOKEN, TOKEN.replace(/\//g, "\\/")],
    ["a token JSON-escaped with \\u002B", TOKEN, TOKEN.replace(/\+/g, "\\u002B")],
    ["a token JSON-escaped with lower-case hex", TOKEN, TOKEN.replace(/\+/g, "\\u002b")],
    ["a token percent-encoded", TOKEN, encodeURIComponent(TOKEN)],
    ["a token percent-encoded in lower case", TOKEN, encodeURIComponent(TOKEN).toLowerCase()],
    ["a pass code with a space, form-encoded", PASS, "pass+word%2F%C3%A9"],
    ["a pass code with non-ASCII, \\u-escaped", PASS, "pass word\\/\\u00e9"]
  ]
  for (const [title, secret, echoed] of forms) {
    it(title, () => {
      expect(scrub(`before ${echoed} after`, [secret])).toBe("before <redacted> after")
      expect(scrub(`before ${echoed} after`, [Redacted.make(secret)])).toBe("before <redacted> after")
    })
  }

  it("a GUID in braces loses its digits, not its braces", () => {
    expect(scrub(`id {${GUID.toLowerCase()}}`, [GUID], exact)).toBe("id {<redacted>}")
  })

  it("replaces every occurrence, of every secret", () => {
    expect(scrub(`${GUID} and ${TOKEN}, again ${GUID.toLowerCase()} and ${TOKEN}`, [GUID, TOKEN]))
      .toBe("<redacted> and <redacted>, again <redacted> and <redacted>")
  })

  it("replaces a secret that contains another whole", () => {
    expect(scrub(`x${TOKEN}${GUID}x`, [GUID, `${TOKEN}${GUID}`], exact)).toBe("x<redacted>x")
  })

  it("never throws: a secret that only looks like a Redacted (it holds nothing) is no secret", () => {
    const empty = Object.create(Object.getPrototypeOf(Redacted.make("x"))) as Redacted.Redacted<string>
    expect(scrub(`x ${TOKEN} y`, [empty, Redacted.make(TOKEN)])).toBe("x <redacted> y")
  })

  it("leaves other text alone, including what only looks like a secret", () => {
    expect(scrub("3F2504E0-4F89-11D3-9A0C-0305E82C3302 is another id", [GUID], exact))
      .toBe("3F2504E0-4F89-11D3-9A0C-0305E82C3302 is another id")
    expect(scrub("no secrets here", [])).toBe("no secrets here")
    expect(scrub("an empty secret matches nothing", [""])).toBe("an empty secret matches nothing")
  })

  it("takes regular-expression characters in a secret literally", () => {
    expect(scrub("a.b*c(d)[e]{f}|g^h$i?j\\k", ["a.b*c(d)[e]{f}|g^h$i?j\\k"])).toBe("<redacted>")
    expect(scrub("aXb", ["a.b"])).toBe("aXb")
  })

  it(`caps the text at ${MAX_TEXT} characters, after scrubbing, so no piece of a secret survives the cut`, () => {
    const padding = "x".repeat(MAX_TEXT - 10)
    const scrubbed = scrub(`${padding}${TOKEN}${"y".repeat(1000)}`, [TOKEN], exact)
    expect(scrubbed).toBe(`${padding}<redacted>...`)
    expect(scrub("z".repeat(MAX_TEXT), [])).toBe("z".repeat(MAX_TEXT))
    expect(scrub("z".repeat(MAX_TEXT + 1), [])).toBe(`${"z".repeat(MAX_TEXT)}...`)
  })

  it("a secret that begins another is no shorter match: the longer one goes whole", () => {
    expect(scrub("id abcdefgh-123456 end", ["abcdefgh", "abcdefgh-123456"])).toBe("id <redacted> end")
    expect(scrub("id abcdefgh-123456 end", ["abcdefgh-123456", "abcdefgh"])).toBe("id <redacted> end")
  })

  it("a secret straddling the search limit, brought into view by the secrets before it shrinking, leaves no piece", () => {
    // 32 secrets shrink from 2,000 characters to 10 each: what follows them is within the first
    // 500 characters, and the 33rd secret is cut by the search limit, unrecognisable.
    const secret = "S".repeat(1_999) + "!"
    const text = secret.repeat(32) + "x".repeat(50) + secret + "tail"
    expect(text.length).toBeGreaterThan(MAX_SEARCHED)
    expect(32 * secret.length + 50).toBeLessThan(MAX_SEARCHED)
    // What of the 33rd secret the cut leaves goes too: no piece of it survives, and the text
    // before it is kept.
    expect(scrub(text, [secret])).toBe(`<redacted>${"x".repeat(50)}<redacted>...`)
  })

  it("the search limit, exactly: a text as long as it is whole; a longer one is searched and shown only that far (issue 24's audit)", () => {
    const secret = "ABCDEFGH12345678"
    const scrubbing = scrubber([secret])
    // As long as the limit: not cut, so its end is no secret's cut-off start, and no "..." follows.
    const whole = `${"x".repeat(96)}ABCD`
    expect(scrubbing(whole, 100)).toBe(whole)
    // Longer: what is past the limit is neither searched nor shown (a limit under MAX_TEXT shows it).
    const longer = `${"y".repeat(100)}${"z".repeat(100)}`
    expect(scrubbing(longer, 100)).toBe(`${"y".repeat(100)}...`)
  })

  it("text past the search limit is cut, and a secret straddling that cut leaves no piece", () => {
    // Long secrets that shrink to <redacted>, so that what follows them would come into view.
    const secret = "S".repeat(1_999) + "!"
    const copies = Math.floor(MAX_SEARCHED / secret.length) - 1
    const straddling = "x".repeat(MAX_SEARCHED - copies * secret.length - 100) + secret
    const scrubbed = scrub(secret.repeat(copies) + straddling + "tail", [secret])
    expect(scrubbed).not.toContain("S".repeat(16))
    expect(scrubbed.endsWith("...")).toBe(true)
    expect(scrubbed.length).toBeLessThanOrEqual(MAX_TEXT + 3)
  })

  it(
    "costs time linear in the text: a secret that nearly matches everywhere (a server's own token) takes no longer",
    () => {
      // A server may hand out a token of 4,096 characters that almost repeats one letter, then echo
      // 64 KiB of that letter: a backtracking search tries the whole token at every position (23 s
      // measured), on the event loop. The bound is generous: the search takes milliseconds.
      for (const secret of ["a".repeat(MAX_SECRET - 1) + "b", "%61".repeat(100) + "b", "{" + "a".repeat(4000)]) {
        const text = "a".repeat(MAX_SEARCHED)
        expect(scrub(text, [secret, GUID, TOKEN])).toBe(`${"a".repeat(MAX_TEXT)}...`)
        expectLinear(() => scrub(text, [secret, GUID, TOKEN]))
      }
      const echoes = "%61".repeat(MAX_SEARCHED / 3)
      expect(scrub(echoes, ["a".repeat(MAX_SECRET - 1) + "b"])).toBe(`${echoes.slice(0, MAX_TEXT)}...`)
      expectLinear(() => scrub(echoes, ["a".repeat(MAX_SECRET - 1) + "b"]))
    },
    120_000
  )

  it("never throws: a secret too long to search for withholds the whole text", () => {
    expect(scrub("a text", ["s".repeat(MAX_SECRET + 1)])).toBe("<withheld: the text could not be checked for secrets>")
    const longest = "t".repeat(MAX_SECRET)
    expect(scrub(`${"u".repeat(4 * 1024 * 1024)}${longest}`, [longest])).toBe(`${"u".repeat(MAX_TEXT)}...`)
    expect(scrub(`a ${longest} b`, [longest])).toBe("a <redacted> b")
  })
})

describe("redactor", () => {
  it("replaces every form of the secret however long the text, and cuts nothing", () => {
    const long = "x".repeat(100_000)
    expect(redactEvery(`${long}${TOKEN.toLowerCase()}${long}${encodeURIComponent(TOKEN)}`, TOKEN))
      .toBe(`${long}<redacted>${long}<redacted>`)
    expect(redactEvery("no secret here", TOKEN)).toBe("no secret here")
    expect(redactEvery("aaa", "aa")).toBe("<redacted>")
  })
})

describe("docs/security.md's example of redaction by shape", () => {
  it("is what scrub does", () => {
    expect(scrub("Person 3f2504e0-4f89-11d3-9a0c-0305e82c3301 born 03/14/1945 not found", [])).toBe(
      "Person <redacted> born <redacted> not found"
    )
  })
})

describe("server text: one search budget for the strings of a value (from review)", () => {
  it("a value of many long strings is searched MAX_SEARCHED characters in all, however many there are", () => {
    const searched: Array<number> = []
    const counting: Scrubber = (text, limit = MAX_SEARCHED) => {
      searched.push(Math.min(text.length, limit))
      return scrubber([])(text, limit)
    }
    const strings = Array.from({ length: 200 }, (_, i) => `${i} ${"x".repeat(MAX_SEARCHED)}`)
    const text = serverText(strings, counting)!
    expect(text.startsWith(`["0 ${"x".repeat(100)}`)).toBe(true)
    // The strings inside, 64 KiB in all, then the rendering once.
    expect(searched.slice(0, -1).reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(MAX_SEARCHED)
    expect(searched.at(-1)).toBeLessThanOrEqual(MAX_SEARCHED)
    expect(serverText("a string", counting)).toBe("a string")
  })
})

describe("a cut text shorter than every secret (issue 24's mutation run)", () => {
  it("still loses what of a secret it ends in: the short-text fast path is for texts not cut", () => {
    const secret = "Qx7vT2mZp9LkW4rB8nYc3HdF6sJ1gA5eU0oKiVbN"
    const scrubbed = scrubber([secret], { byShape: false })(`id=${secret}`, 12)
    // Cut at 12: "id=" and the secret's first 9 characters, shorter than the secret.
    expect(scrubbed).toBe("id=<redacted>...")
    // Not cut, the same short text holds no secret and is kept as it is.
    expect(scrubber([secret], { byShape: false })(`id=${secret.slice(0, 9)}`)).toBe(`id=${secret.slice(0, 9)}`)
  })
})
