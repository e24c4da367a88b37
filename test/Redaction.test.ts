/**
 * The one function that scrubs secrets out of text we did not write: every form a server
 * plausibly echoes a value in, every occurrence, and the cap applied after scrubbing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Redacted } from "effect"
import { serverText } from "../src/internal/call/response.js"
import {
  MAX_SEARCHED,
  MAX_SECRET,
  MAX_TEXT,
  redactor,
  scrub,
  type Scrubber,
  scrubber
} from "../src/internal/redaction/redaction.js"

const redactEvery = (text: string, secret: string) => redactor([secret])(text)

/** The search for known secrets alone, where a test is about what it finds (and does not find) exactly. */
const exact = { byShape: false } as const

const GUID = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"
const TOKEN = "c2VjcmV0LXRva2Vu+/YWJj=="
const PASS = "pass word/é"

/** The least of three timings of `run` (ms). */
const fastest = (run: () => unknown): number => {
  let least = Infinity
  for (let i = 0; i < 3; i++) {
    const started = performance.now()
    run()
    least = Math.min(least, performance.now() - started)
  }
  return least
}

/**
 * `scrub` takes about as long on `hostile` as on a plain text of the longest length it searches,
 * measured in the same moment (a loaded machine slows both): a search that backtracks took 23 s
 * on such a text, thousands of times the plain one, where a linear one stays within a few times.
 */
const expectLinear = (hostile: () => unknown, what?: string): void => {
  const plain = "x".repeat(MAX_SEARCHED)
  const baseline = fastest(() => scrub(plain, [TOKEN, GUID, "y".repeat(MAX_SECRET)]))
  expect(fastest(hostile), what).toBeLessThan(100 * baseline + 50)
}

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

describe("scrub: each way a character of a secret may be written", () => {
  const cases: ReadonlyArray<readonly [string, string, string]> = [
    ["a non-ASCII character as a JSON \\u escape", "café-secret-1", "caf\\u00e9-secret-1"],
    ["a non-ASCII character percent-encoded", "café-secret-1", "caf%C3%A9-secret-1"],
    ["a slash JSON-escaped", "a/b-secret-12", "a\\/b-secret-12"],
    ["a quote JSON-escaped", `a"b-secret-12`, `a\\"b-secret-12`],
    ["a backslash JSON-escaped", "a\\b-secret-12", "a\\\\b-secret-12"],
    ["a space form-encoded", "a b-secret-12", "a+b-secret-12"],
    ["a character outside the BMP as a JSON surrogate pair", "key\u{1F511}-secret-1", "key\\ud83d\\udd11-secret-1"],
    ["a character outside the BMP percent-encoded", "key\u{1F511}-secret-1", "key%F0%9F%94%91-secret-1"],
    ["a non-ASCII letter in another case", "CAFÉ-secret-1", "café-secret-1"],
    ["a non-ASCII letter in another case, the other way", "café-secret-1", "CAFÉ-SECRET-1"],
    ["a JSON \\u escape with upper-case hex digits", "café-secret-1", "caf\\u00E9-secret-1"],
    ["a \\U escape (some serializers)", "café-secret-1", "caf\\U00e9-secret-1"],
    ["percent-encoded with lower-case hex digits", "café-secret-1", "caf%c3%a9-secret-1"],
    ["a NUL as a JSON escape", "nul\u0000-secret-1", "nul\\u0000-secret-1"],
    ["a NUL percent-encoded", "nul\u0000-secret-1", "nul%00-secret-1"],
    ["U+0080, the first of two UTF-8 bytes", "edge\u0080-secret-1", "edge%C2%80-secret-1"],
    ["U+07FF, the last of two UTF-8 bytes", "edge\u07FF-secret-1", "edge%DF%BF-secret-1"],
    ["U+0800, the first of three UTF-8 bytes", "edge\u0800-secret-1", "edge%E0%A0%80-secret-1"],
    ["U+FFFF, the last of three UTF-8 bytes", "edge\uFFFF-secret-1", "edge%EF%BF%BF-secret-1"],
    ["U+10000, the first of four UTF-8 bytes", "edge\u{10000}-secret-1", "edge%F0%90%80%80-secret-1"],
    ["U+10FFFF, the last of four UTF-8 bytes", "edge\u{10FFFF}-secret-1", "edge%F4%8F%BF%BF-secret-1"],
    ["a Z in another case", "ZIP-secret-1", "zip-SECRET-1"],
    ["\\u escapes with a and A among their digits", "copy\u00a9\u00A9-secret-1", "copy\\u00a9\\u00A9-secret-1"],
    ["a line feed percent-encoded, its hex in either case", "line\nfeed\n-secret-1", "line%0afeed%0A-secret-1"],
    ["a percent escape just before a % that starts none", "lit/%zz-secret-1", "lit%2F%zz-secret-1"],
    ["a two-byte escape just before a % that starts none", "café%zz-secret-1", "caf%C3%A9%zz-secret-1"]
  ]
  for (const [name, secret, echoed] of cases) {
    it(name, () => {
      expect(scrub(`before ${echoed} after`, [secret])).toBe("before <redacted> after")
    })
  }

  it("an escaped last or first character is replaced whole, escape included", () => {
    expect(scrub("x secret-token\\/ y", ["secret-token/"])).toBe("x <redacted> y")
    expect(scrub("x \\/secret-token y", ["/secret-token"])).toBe("x <redacted> y")
    expect(scrub("x secret-token\\u002B y", ["secret-token+"])).toBe("x <redacted> y")
    expect(scrub("x secret-token%F0%9F%94%91 y", ["secret-token\u{1F511}"])).toBe("x <redacted> y")
    expect(scrub("x secret-token%2F y", ["secret-token/"])).toBe("x <redacted> y")
  })

  it("what only looks like an escape is text like any other, and is not decoded", () => {
    // Each of these, echoed as it is, is found as it is.
    const literal = [
      "lit%zz-secret-1", // not hexadecimal
      "lit%C0%80-secret-1", // an overlong NUL
      "lit%80-secret-1", // a continuation byte alone
      "lit%C3x-secret-1", // a sequence cut short
      "lit%ED%A0%80-secret-1", // a surrogate
      "lit%F4%90%80%80-secret-1", // past U+10FFFF
      "lit%F8%80%80%80-secret-1", // no such lead byte
      "lit\\u12zz-secret-1", // \u without four hexadecimal digits
      "lit\\u00:A-secret-1", // nor these
      "lit\\b1234-secret-1", // a backslash before another letter
      "lit-secret-1\\u00" // an escape cut by the end
    ]
    for (const secret of literal) expect(scrub(`x ${secret} y`, [secret])).toBe("x <redacted> y")
    // An escape cut short by the very end of the text, a \u or a %, is text too.
    expect(scrub("x lit-secret-1\\u00", ["lit-secret-1\\u00"])).toBe("x <redacted>")
    expect(scrub("x lit-secret-1%C", ["lit-secret-1%C"])).toBe("x <redacted>")
    // ... and none of them stands for a character.
    expect(scrub("x%C0%80y", ["x\u0000y"])).toBe("x%C0%80y")
    expect(scrub("x%80y", ["x\u0080y"])).toBe("x%80y")
    expect(scrub("x%ED%A0%80y", ["x\ud800y"])).toBe("x%ED%A0%80y")
    expect(scrub("x\\b1234y", ["x\u1234y"])).toBe("x\\b1234y")
  })

  it("a secret whose start repeats inside it is found wherever a search would have to fall back", () => {
    expect(scrub("xaaab", ["aab"])).toBe("xa<redacted>")
    expect(scrub("aabaabaaab-end", ["aabaaab"])).toBe("aab<redacted>-end")
    expect(scrub("ababab", ["abab"])).toBe("<redacted>")
    expect(scrub("abacabab", ["abab"])).toBe("abac<redacted>")
    // ... and nowhere else: what follows a secret is not taken for more of it.
    expect(scrub("bbaba", ["bba"])).toBe("<redacted>ba")
    expect(scrub("abbb", ["abb"])).toBe("<redacted>b")
    // ... and nowhere else: what follows a secret is not taken for more of it.
    expect(scrub("bbaba", ["bba"])).toBe("<redacted>ba")
    expect(scrub("abbb", ["abb"])).toBe("<redacted>b")
  })

  it("a secret that itself holds what looks like an escape is found as it is written (from review)", () => {
    // A PersonUid may be any visible ASCII: URL-encoded base64, say.
    for (const secret of ["p%41ss", "q1w2%2Be3r4%2Fz%3D%3D", "ab\\", "a\\\\b", "x\\u0041y"]) {
      expect(scrub(`token "${secret}" rejected`, [secret])).toBe(`token "<redacted>" rejected`)
    }
    // ... and found encoded once more, as a URL or JSON would write it.
    expect(scrub("x q1w2%252Be3r4 y", ["q1w2%2Be3r4"])).toBe("x <redacted> y")
  })

  it("a secret just after a % is found, even when the % and its first characters look like an escape (from review)", () => {
    const guid = "6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"
    expect(scrub(`WHERE uid LIKE '%${guid}%'`, [guid], exact)).toBe("WHERE uid LIKE '%<redacted>%'")
    expect(scrub(`WHERE uid LIKE '%${guid.toUpperCase()}%'`, [guid], exact)).toBe("WHERE uid LIKE '%<redacted>%'")
    // A % that can take the secret's first characters for an escape goes with it (the safe side).
    expect(scrub("x %41bcdef-secret y", ["41bcdef-secret"])).toBe("x <redacted> y")
  })

  it("letters whose cases do not map one to one are matched as a case-insensitive search matches them (from review)", () => {
    expect(scrub("token οδος", ["ΟΔΟΣ"])).toBe("token <redacted>")
    expect(scrub("dose 5ΜG", ["5µg"])).toBe("dose <redacted>")
    expect(scrub("x ΒETA", ["ϐeta"])).toBe("x <redacted>")
    // Letters that fold alike are taken for one another: redacting too much is the safe side.
    expect(scrub("x ıd-secret", ["Id-secret"])).toBe("x <redacted>")
  })

  it("letter cases as culture-specific or compatibility forms write them (from review)", () => {
    // A Turkish-culture ToUpper / ToLower of a pass code.
    expect(scrub("code Pİ-7 refused", ["pi-7"])).toBe("code <redacted> refused")
    expect(scrub("code pın-7 refused", ["PIN-7"])).toBe("code <redacted> refused")
    // The sharp s and its capital; the Kelvin, Ohm and Ångström signs for their letters.
    expect(scrub("x STRAẞE-1 y", ["straße-1"])).toBe("x <redacted> y")
    expect(scrub("x \u212a9-code y", ["k9-code"])).toBe("x <redacted> y")
    expect(scrub("x Ω-code y", ["ω-code"])).toBe("x <redacted> y")
    expect(scrub("x Å-code y", ["å-code"])).toBe("x <redacted> y")
  })

  it("a secret is found whichever of JSON escaping and percent-encoding the server applied (from review)", () => {
    const uid = "4Fab+cd/ef=="
    // After a %, with the secret JSON-escaped (System.Text.Json escapes +, PHP escapes /).
    // (The % that can take its first characters for an escape goes with it.)
    expect(scrub(`uid LIKE '%4Fab\\u002Bcd/ef==%'`, [uid])).toBe("uid LIKE '<redacted>%'")
    expect(scrub(`uid LIKE '%4Fab+cd\\/ef==%'`, [uid])).toBe("uid LIKE '<redacted>%'")
    // A secret holding what looks like a percent escape, JSON-escaped elsewhere.
    expect(scrub("x x%41y\\/z-secret y", ["x%41y/z-secret"])).toBe("x <redacted> y")
    expect(scrub("x ab%2Bcd\\u002Bef y", ["ab%2Bcd+ef"])).toBe("x <redacted> y")
    // ... and one holding a JSON escape, percent-encoded elsewhere.
    expect(scrub("x q\\u0041y%2Fz y", ["q\\u0041y/z"])).toBe("x <redacted> y")
  })

  it("a secret that holds an escape is found decoded too: the server may have decoded it before echoing it (from review)", () => {
    expect(scrub("no person ab+cd/e", ["ab%2Bcd%2Fe"])).toBe("no person <redacted>")
    expect(scrub("no person ab cd", ["ab%20cd"])).toBe("no person <redacted>")
    expect(scrub("no person a/b", ["a\\/b"])).toBe("no person <redacted>")
  })

  it("a GUID given in braces or as 32 digits is found in every GUID form (from review)", () => {
    const guid = "6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"
    const digits = guid.replace(/-/g, "")
    for (const secret of [`{${guid}}`, digits, digits.toUpperCase()]) {
      for (const echoed of [guid, guid.toUpperCase(), digits, `{${guid}}`, `(${guid})`]) {
        expect(scrub(`person ${echoed} unknown`, [secret])).toMatch(/^person [({]?<redacted>[)}]? unknown$/)
      }
    }
  })

  it("occurrences that touch are replaced once: a text made of a secret shrinks (from review)", () => {
    expect(scrub("aaaa", ["a"])).toBe("<redacted>")
    expect(scrub("x abab y ab", ["ab"])).toBe("x <redacted> y <redacted>")
    expect(redactEvery("a".repeat(1_000_000), "a")).toBe("<redacted>")
    expect(redactEvery(`${"%61".repeat(100_000)}-`, "a")).toBe("<redacted>-")
  })

  it("malformed percent sequences, however many, are characters like any other", () => {
    const malformed = "%F0%C0%80%ED%A0%80%F4%90%80%80%E0%80%AF%80%C2%F5%80"
    expect(redactEvery(`${malformed.repeat(1000)}secret${malformed}`, "secret")).toBe(
      `${malformed.repeat(1000)}<redacted>${malformed}`
    )
    // Well-formed neighbours of each: the first and last of their ranges.
    expect(scrub("x %F0%90%80%80%F4%8F%BF%BF%E0%A0%80%ED%9F%BF y", ["\u{10000}\u{10FFFF}\u0800\uD7FF"])).toBe(
      "x <redacted> y"
    )
  })

  it("nothing but a well-formed escape stands for a character: no other text is taken for any character at all", () => {
    // Each is malformed at one boundary of what is read as an escape; echoed alone, it must not be
    // taken for any character it does not hold as written: every other BMP unit is a secret here.
    const malformed = [
      ...["%0g", "%g0", "%0G", "%G0", "%0z", "%0:", "%0/", "%0@", "%0`", "%0", "%"],
      ...["\\x0041", "\\u00g1", "\\u00G1", "\\u00:1", "\\u004", "\\u", "\\q"],
      ...["%80", "%BF", "%C0%80", "%C1%BF", "%C2", "%C2%C3", "%C2x", "%DF%C0"],
      ...["%E0%9F%BF", "%E0%80%80", "%ED%A0%80", "%ED%BF%BF", "%E2%82", "%E2%82%C3", "%E2%82x", "%E2%C3"],
      ...["%F0%8F%BF%BF", "%F0%80%80%80", "%F4%90%80%80", "%F5%80%80%80", "%FF%80%80%80", "%F0%90%80"],
      ...["%F0%90%80%C3", "%F0%90%80x", "%F0%90%C3"],
      // Escapes without their % or backslash (the text holds each, so that each reading is made).
      ...["%x7e", "%C2x80", "%E2%82x80", "%F0%90%80x80", "xu00ff\\\\"]
    ]
    const written = `[]${malformed.join("")}`
    const holds = (unit: string) =>
      [unit, unit.toLowerCase(), unit.toUpperCase(), unit.toUpperCase().toLowerCase()].some((form) =>
        written.toLowerCase().includes(form.toLowerCase())
      )
    // Every unit a misreading of these could give: below U+0800 (what an overlong form or a bad hex
    // digit gives), around U+2080 (the three-byte sequences above), and the surrogates (four bytes).
    const range = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => String.fromCharCode(from + i))
    const others = [...range(0, 0x800), ...range(0x2000, 0x2100), ...range(0xd800, 0xe000)].filter(
      (unit) => !holds(unit) && unit !== " " && unit !== "+"
    )
    const scrubOthers = scrubber(others)
    expect(malformed.filter((text) => scrubOthers(`[${text}]`) !== `[${text}]`)).toEqual([])
    // The well-formed neighbours are read, so the check above can see a decoding.
    expect(scrubOthers("[%C2%80]")).toBe("[<redacted>]")
    expect(scrubOthers("[\\u00e9]")).toBe("[<redacted>]")
  })

  it("a secret is found where both decodings are needed at once", () => {
    expect(scrub("x a\\/b%2Bc y", ["a/b+c"])).toBe("x <redacted> y")
  })

  it("a character outside the BMP, percent-encoded, is replaced whole, even where only its first half is part of a secret", () => {
    expect(scrub("a%F0%9F%98%80b", ["a\uD83D"])).toBe("<redacted>b")
  })

  it("a secret that only looks like a GUID in braces is looked for as it is", () => {
    const guid = "6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"
    for (const secret of [`{${guid}x`, `x${guid}}`, `{${guid}`, `${guid}}`]) {
      expect(scrub(`id ${guid} unknown`, [secret], exact)).toBe(`id ${guid} unknown`)
      expect(scrub(`id ${secret} unknown`, [secret], exact)).toBe("id <redacted> unknown")
    }
  })

  it("a backslash escapes only a slash, a quote or a backslash: before another character it is kept", () => {
    expect(scrub("x \\a\\b-secret-12 y", ["ab-secret-12"])).toBe("x \\a\\b-secret-12 y")
  })

  it("a plus sign is a space's form only: other characters are not matched by it", () => {
    expect(scrub("x+y-secret-12", ["xzy-secret-12"])).toBe("x+y-secret-12")
  })

  it("no secret, or an empty one, leaves the text as it is", () => {
    expect(scrub("Stryker was here", [])).toBe("Stryker was here")
    // With no secret there is no pattern: nothing is replaced, not even the word "undefined".
    expect(scrub("the field was undefined", [])).toBe("the field was undefined")
    expect(scrub("abc", [""])).toBe("abc")
  })
})

describe("scrub: forms a real ASP.NET/IIS service could echo (issue 22)", () => {
  const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64")
  const base64url = (text: string) => Buffer.from(text, "utf8").toString("base64url")
  const jsonInJson = (text: string) =>
    JSON.stringify(JSON.stringify({ echo: text }).replace(/\//g, "\\/").replace(/\+/g, "\\u002B"))
  const html = (text: string) =>
    text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(
      /'/g,
      "&#39;"
    )
  const PASS_CODE = "Straße&<'x>7"

  const exactForms: ReadonlyArray<readonly [string, string, string, string?]> = [
    ["a token percent-encoded twice", TOKEN, encodeURIComponent(encodeURIComponent(TOKEN))],
    ["a token percent-encoded three times", TOKEN, encodeURIComponent(encodeURIComponent(encodeURIComponent(TOKEN)))],
    ["a token in JSON inside a JSON string", TOKEN, jsonInJson(TOKEN), `"{\\"echo\\":\\"<redacted>\\"}"`],
    [
      "a PersonUid in JSON inside a JSON string",
      "Qk9C/x+y==",
      jsonInJson("Qk9C/x+y=="),
      `"{\\"echo\\":\\"<redacted>\\"}"`
    ],
    ["a pass code upper-cased with its ß as SS", PASS_CODE, PASS_CODE.toUpperCase()],
    ["a pass code HTML-escaped", PASS_CODE, html(PASS_CODE)],
    ["a pass code XML-escaped (&apos;)", PASS_CODE, html(PASS_CODE).replace("&#39;", "&apos;")],
    [
      "a token with its = and + as XML numeric references",
      TOKEN,
      TOKEN.replace(/=/g, "&#x3D;").replace(/\+/g, "&#43;")
    ],
    ["a token with named HTML5 references", TOKEN, TOKEN.replace(/\+/g, "&plus;").replace(/\//g, "&sol;")],
    ["an HTML-escaped pass code, percent-encoded", PASS_CODE, encodeURIComponent(html(PASS_CODE))],
    [
      "a GUID in braces percent-encoded twice",
      GUID,
      encodeURIComponent(encodeURIComponent(`{${GUID}}`)),
      "%257B<redacted>%257D"
    ]
  ]
  for (const [title, secret, echoed, expected = "<redacted>"] of exactForms) {
    it(`the exact search finds ${title}`, () => {
      expect(scrub(`before ${echoed} after`, [secret], exact)).toBe(`before ${expected} after`)
    })
  }

  it("a secret with hyphens is found without them too, or with other separators (a service may normalise a pass code)", () => {
    for (const echoed of ["EW2719KQ", "ew-2719kq", "EW 2719 KQ", "EW\u20132719\u2013KQ", "EW+2719+KQ"]) {
      expect(scrub(`code ${echoed} refused`, ["EW-2719-KQ"], exact), echoed).toBe("code <redacted> refused")
    }
  })

  it("a secret encoded alone in base64 or base64url, padded or not, is found however short its encoding", () => {
    for (const echoed of ["RVctMjcxOS1LUQ==", "RVctMjcxOS1LUQ", "MDMvMTQvMTk0NQ=="]) {
      expect(scrub(`x ${echoed} y`, ["EW-2719-KQ", "03/14/1945"], exact), echoed).toBe("x <redacted> y")
    }
    const token = "ab+/c?d>e~"
    expect(scrub(`x ${Buffer.from(token).toString("base64url")} y`, [token], exact)).toBe("x <redacted> y")
    // A secret of a few bytes has no base64 form looked for: it would be found in any text.
    expect(scrub("x Zm9v y", ["foo"], exact)).toBe("x Zm9v y")
  })

  it("decodes at most four rounds deep: a fifth encoding is no form of the secret (and costs no more)", () => {
    let echoed = "se-cret/x+y"
    for (let round = 0; round < 5; round++) echoed = encodeURIComponent(echoed)
    expect(scrub(`a ${echoed} b`, ["se-cret/x+y"], exact)).toBe(`a ${echoed} b`)
  })

  it("ß in a secret and SS, ss or ẞ in the text are one and the same (full case folding)", () => {
    for (const echoed of ["STRASSE-12", "strasse-12", "straẞe-12", "STRAẞE-12"]) {
      expect(scrub(`x ${echoed} y`, ["straße-12"], exact), echoed).toBe("x <redacted> y")
    }
    expect(scrub("x straße-12 y", ["STRASSE-12"], exact)).toBe("x <redacted> y")
  })

  it("what only looks like an entity is text like any other: nothing decodes to a character it does not stand for", () => {
    // A misreading would make "[&]" or "[\u0000]" of these, which the text does not hold as written.
    for (const text of ["&amp", "&#;", "&#x;", "&#xZZ;", "&unknown;", "&#99999999;", "& amp;", "&#x110000;", "&AmP;"]) {
      expect(scrub(`[${text}]`, ["[&]", "[\u0000]"], exact), text).toBe(`[${text}]`)
    }
    expect(scrub("[&amp;]", ["[&]"], exact)).toBe("<redacted>")
    expect(scrub("[&#0;]", ["[\u0000]"], exact)).toBe("<redacted>")
  })

  const shapeForms: ReadonlyArray<readonly [string, string, string?]> = [
    ["base64 of the token", base64(TOKEN)],
    ["URL-safe base64 of the token", base64url(TOKEN)],
    ["base64 of the ApplicationId", base64(GUID)],
    ["base64 of the ApplicationId's 16 bytes", Buffer.from(GUID.replace(/-/g, ""), "hex").toString("base64")],
    ["base64 of a data request body", base64(JSON.stringify({ personuid: "Qk9CL3BlcnNvbi91aWQrKz09/x+y==" }))],
    [
      "base64 of an authenticate body",
      base64(JSON.stringify({ ApplicationId: GUID, PassCode: "EW-2719-KQ", DateOfBirth: "01/31/1970" }))
    ],
    ["base64 of the token, percent-encoded", encodeURIComponent(base64(TOKEN))],
    ["base64 of the token, JSON-escaped", base64(TOKEN).replace(/\//g, "\\/").replace(/\+/g, "\\u002B")],
    ["any GUID", "6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"],
    ["any GUID in braces", "{6F3A9C2E-1B4D-4E8F-9A0B-1C2D3E4F5A6B}"],
    ["any 32 hex digits", "6f3a9c2e1b4d4e8f9a0b1c2d3e4f5a6b"],
    ["a date as .NET's JSON writes it", "/Date(2649600000)/"],
    ["a date as .NET's JSON writes it, escaped", "\\/Date(-2649600000+0100)\\/"],
    ["a date day first", "31/01/1970"],
    ["a date month first", "01/31/1970"],
    ["a date with dots", "31.01.1970"],
    ["a date, ISO", "1970-01-31"],
    ["a date, ISO with its time", "1970-01-31T00:00:00", "<redacted>T00:00:00"],
    ["a date as .NET prints it", "1/31/1970 12:00:00 AM", "<redacted> 12:00:00 AM"],
    ["a date in words", "Saturday, January 31, 1970"],
    ["a date in words, day first", "31 January 1970"],
    ["a date, abbreviated", "31-Jan-1970"],
    ["a date as eight digits", "19700131"],
    ["a date percent-encoded", encodeURIComponent("01/31/1970")],
    ["a date as milliseconds since 1970", "-783302400000"],
    ["a date as seconds since 1970", "-783302400"],
    ["a date as eight digits, month first", "03141945"],
    ["a date as eight digits, day first", "14031945"],
    ["a date as East Asian cultures write it", "1945年3月14日"],
    ["the first 16 characters of a token", "Qk9CL3BlcnNvbi91"]
  ]
  for (const [title, echoed, expected = "<redacted>"] of shapeForms) {
    it(`redacted by shape: ${title}`, () => {
      expect(scrub(`Error: ${echoed} refused`, [])).toBe(`Error: ${expected} refused`)
      // The exact search alone knows nothing of these: the shape is what finds them.
      expect(scrub(`Error: ${echoed} refused`, [], exact)).toBe(`Error: ${echoed} refused`)
    })
  }

  it("what is not a secret's shape stays readable: words, identifiers, paths, addresses, versions, statuses", () => {
    const kept = [
      "PersonNotFound",
      "INVALID_APPLICATION_IDENTIFIER",
      "System.NullReferenceException: Object reference not set to an instance of an object.",
      "No HTTP resource was found that matches the request URI 'https://openapi.intelichart.com/api/clinical/medication/get'.",
      "connect ECONNREFUSED 10.10.10.10:443",
      "version 1.2.3, HTTP 503, 12:00:00",
      "an-ordinary-hyphenated-phrase-of-words"
    ]
    for (const text of kept) expect(scrub(text, []), text).toBe(text)
  })

  it("a person's items are not redacted by shape: their dates and codes are the data", () => {
    expect(redactor(["unrelated"])("started 1970-01-31, code 6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b"))
      .toBe("started 1970-01-31, code 6f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b")
  })

  it("redaction by shape costs time linear in the text, whatever it holds", () => {
    const texts = [
      "January ".repeat(MAX_SEARCHED / 8),
      "1/".repeat(MAX_SEARCHED / 2),
      "a".repeat(MAX_SEARCHED - 1) + "!",
      "/Date(".repeat(MAX_SEARCHED / 6),
      "%25".repeat(MAX_SEARCHED / 3),
      "&amp;".repeat(MAX_SEARCHED / 5)
    ]
    for (const text of texts) expectLinear(() => scrub(text, [TOKEN, GUID]), text.slice(0, 20))
  })
})

describe("an escape in the text that takes a secret's first or last characters (found by fuzzing)", () => {
  it("a cut-short escape just before the secret, which itself needs decoding: the secret goes, with the escape", () => {
    expect(scrub("x \\u00aa\\u002Baaaaaaaa y", ["aa+aaaaaaaa"], exact)).toBe("x <redacted> y")
    expect(scrub("x %4f%2Bxyzabc y", ["4f+xyzabc"], exact)).toBe("x <redacted> y")
  })

  it("a secret ending in the start of an escape, which the text goes on from", () => {
    expect(scrub("x abc%2Bdef%41 y", ["abc+def%"], exact)).toBe("x <redacted> y")
    expect(scrub("x abc\\u002Bdef\\u0041 y", ["abc+def\\u00"], exact)).toBe("x <redacted> y")
  })

  it("anchored to an escape only: what is left of the secret alone, or after plain text, is no match", () => {
    expect(scrub("x +aaaaaaaa y", ["aa+aaaaaaaa"], exact)).toBe("x +aaaaaaaa y")
    expect(scrub("x zz\\u002Baaaaaaaa y", ["aa+aaaaaaaa"], exact)).toBe("x zz\\u002Baaaaaaaa y")
    expect(scrub("x \\u00bb\\u002Baaaaaaaa y", ["aa+aaaaaaaa"], exact)).toBe("x \\u00bb\\u002Baaaaaaaa y")
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
