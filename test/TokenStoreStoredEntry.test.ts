/**
 * A stored entry read back (src/internal/token/storedEntry.ts): each way it can be unreadable, by its
 * reason, and sealing keys given in each form (issue 24's mutation run).
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, Redacted } from "effect"
import { TokenStore } from "effect-clinical"
import * as Crypto from "node:crypto"
import * as StoredEntry from "../src/internal/token/storedEntry.js"
import * as Keys from "./support/Keys.js"

describe("a stored entry read back: each way it can be unreadable, by its reason (issue 24's mutation run)", () => {
  const token = "abc.DEF"
  const json = (fields: Record<string, unknown> = {}) =>
    JSON.stringify({
      token,
      lifetimeMillis: 3_600_000,
      serverLifetimeMillis: 3_600_000,
      serverClockSkewMillis: null,
      ...fields
    })
  const print = TokenStore.fingerprint(Redacted.make(token))
  const key = Either.getOrThrow(StoredEntry.sealingKey(Keys.sealingKey(3)))
  const otherKey = Either.getOrThrow(StoredEntry.sealingKey(Keys.sealingKey(4)))
  const sealed = StoredEntry.encode(
    { token: Redacted.make(token), lifetimeMillis: 1000, serverLifetimeMillis: 1000, serverClockSkewMillis: undefined },
    key,
    "k"
  )
  const sealedBody = sealed.slice(sealed.indexOf("|") + 1)
  const reasonOf = (text: string, sealingKey: StoredEntry.SealingKey | undefined = undefined) =>
    Either.match(StoredEntry.decode(text, sealingKey, "k"), {
      onLeft: (unreadable) => `${unreadable.sealedOtherwise ? "sealed otherwise: " : ""}${unreadable.reason}`,
      onRight: () => "read"
    })
  /** A seal of `bytes` bytes after the prefix. */
  const sealOf = (bytes: number) => `sealed:v1:${Crypto.randomBytes(bytes).toString("base64")}`

  it.each(
    [
      ["as written", `${print}|${json()}`, undefined, "read"],
      [
        "exactly as long as the longest",
        `${print}|${json()}`.padEnd(StoredEntry.MAX_STORED_LENGTH, " "),
        undefined,
        "read"
      ],
      [
        "one character longer",
        `${print}|${json()}`.padEnd(StoredEntry.MAX_STORED_LENGTH + 1, " "),
        undefined,
        "the stored token is longer than any token"
      ],
      ["no bar", json(), undefined, "the stored token has no fingerprint"],
      ["a fingerprint without its bar", `${print}x`, undefined, "the stored token has no fingerprint"],
      ["a fingerprint one short", `${print.slice(1)}|${json()}`, undefined, "the stored token has no fingerprint"],
      [
        "a fingerprint in upper case",
        `${print.toUpperCase()}|${json()}`,
        undefined,
        "the stored token has no fingerprint"
      ],
      [
        "another token's fingerprint",
        `${"0".repeat(32)}|${json()}`,
        undefined,
        "the stored token's fingerprint is not its own"
      ],
      [
        "sealed, read without a key",
        sealed,
        undefined,
        "sealed otherwise: the stored token is sealed, and this instance has no sealing key"
      ],
      [
        "sealed with another key",
        sealed,
        otherKey,
        "sealed otherwise: the stored token's seal does not open with this key (another sealing key, or tampered)"
      ],
      ["sealed, read with its key", sealed, key, "read"],
      [
        "in the clear, read by an instance that seals",
        `${print}|${json()}`,
        key,
        "the stored token is not sealed, and this instance seals"
      ],
      ["a seal no longer than its IV and tag", `${print}|${sealOf(28)}`, key, "the stored token's seal is cut short"],
      [
        "a seal one byte longer",
        `${print}|${sealOf(29)}`,
        key,
        "sealed otherwise: the stored token's seal does not open with this key (another sealing key, or tampered)"
      ],
      ["not JSON", `${print}|{token`, undefined, "the stored token is not JSON"],
      ["JSON null", `${print}|null`, undefined, "the stored token is not a JSON object"],
      ["a JSON number", `${print}|5`, undefined, "the stored token is not a JSON object"],
      [
        "a token with a line break",
        `${print}|${json({ token: "abc\r\nX-Evil: 1" })}`,
        undefined,
        "the stored token is not header-safe"
      ],
      [
        "a lifetime as text",
        `${print}|${json({ lifetimeMillis: "3600000" })}`,
        undefined,
        "the stored token's lifetime is not a positive number"
      ],
      ["the largest safe lifetime", `${print}|${json({ lifetimeMillis: Number.MAX_SAFE_INTEGER })}`, undefined, "read"],
      [
        "a lifetime past the safe integers",
        `${print}|${json({ lifetimeMillis: 2 ** 60 })}`,
        undefined,
        "the stored token's lifetime is not a positive number"
      ],
      [
        "no clock skew at all",
        `${print}|${JSON.stringify({ token, lifetimeMillis: 1, serverLifetimeMillis: 1 })}`,
        undefined,
        "read"
      ]
    ] as const
  )("%s", (_, text, sealingKey, expected) => {
    expect(reasonOf(text, sealingKey)).toBe(expected)
  })

  it("the fields read back are the stored ones, a skew of 0 included", () => {
    const read = StoredEntry.decode(`${print}|${json({ serverClockSkewMillis: 0, lifetimeMillis: 5 })}`, undefined, "k")
    expect(Either.map(read, ({ entry }) => [entry.lifetimeMillis, entry.serverClockSkewMillis])).toEqual(
      Either.right([5, 0])
    )
    const opened = StoredEntry.decode(sealed, key, "k")
    expect(Either.map(opened, ({ entry }) => Redacted.value(entry.token))).toEqual(Either.right(token))
    expect(sealedBody.startsWith("sealed:v1:")).toBe(true)
  })

  it.each(
    [
      ["base64 with blanks around it", ` ${Keys.sealingKey(5).toString("base64")}\n`, true],
      ["hex", Keys.sealingKey(5).toString("hex"), true],
      ["hex with two more characters", `${Keys.sealingKey(5).toString("hex")}zz`, false],
      ["hex after one more hex digit", `0${Keys.sealingKey(5).toString("hex")}`, false],
      ["hex after two other characters", `zz${Keys.sealingKey(5).toString("hex")}`, false],
      ["base64 after two other characters", `!!${Keys.sealingKey(5).toString("base64")}`, false],
      ["base64 with two more characters", `${Keys.sealingKey(5).toString("base64")}!!`, false],
      ["43 characters and one that is not base64", `${Keys.sealingKey(5).toString("base64").slice(0, 43)}!`, false],
      ["31 different bytes", Uint8Array.from({ length: 31 }, (_, i) => i), false],
      ["33 different bytes", Uint8Array.from({ length: 33 }, (_, i) => i), false]
    ] as const
  )("a sealing key given as %s", (_, value, taken) => {
    const read = StoredEntry.sealingKey(value)
    expect(Either.isRight(read)).toBe(taken)
    if (!taken && Either.isLeft(read)) {
      expect(read.left).toBe(
        "must be 32 bytes: a Uint8Array, or their base64 (44 characters) or hex (64 characters)"
      )
    }
  })
})
