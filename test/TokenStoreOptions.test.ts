/**
 * `TokenStore.redis`'s options: each one refused by its setting, sealing keys in each form (and
 * those too weak to seal with, issue 22), and an entry sealed and read back.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Redacted } from "effect"
import { TokenStore } from "effect-clinical"
import * as Crypto from "node:crypto"
import * as StoredEntry from "../src/internal/token/storedEntry.js"
import * as Keys from "./support/Keys.js"

describe("TokenStore.redis: options", () => {
  const redis = TokenStore.ioredis({ call: () => Promise.resolve(null) })
  const refusedOptions: ReadonlyArray<readonly [string, unknown, string]> = [
    ["no options", undefined, "tokenStore.options"],
    ["no port", {}, "tokenStore.redis"],
    ["a client instead of a port", { redis: { get: () => {} } }, "tokenStore.redis"],
    ["a prefix with a space", { redis, keyPrefix: "my app" }, "tokenStore.keyPrefix"],
    ["a sealing key of 16 bytes", { redis, sealingKey: Buffer.alloc(16).toString("base64") }, "tokenStore.sealingKey"],
    [
      "a sealing key that is a word",
      { redis, sealingKey: Redacted.make("correct horse battery staple") },
      "tokenStore.sealingKey"
    ],
    [
      "a sealing key that only looks like a Redacted (it holds nothing)",
      { redis, sealingKey: Object.create(Object.getPrototypeOf(Redacted.make("x"))) },
      "tokenStore.sealingKey"
    ],
    ["a zero timeout", { redis, timeout: 0 }, "tokenStore.timeout"],
    ["a timeout over a minute", { redis, timeout: "2 minutes" }, "tokenStore.timeout"],
    ["a retryAfter that is not a duration", { redis, retryAfter: "soon" }, "tokenStore.retryAfter"],
    ["an unknown onUnavailable", { redis, onUnavailable: "ignore" }, "tokenStore.onUnavailable"]
  ]
  for (const [name, options, setting] of refusedOptions) {
    it(`refuses ${name}, naming ${setting}, never echoing a key`, () => {
      const result = TokenStore.redis(options as TokenStore.RedisOptions)
      expect(result).toMatchObject({ _tag: "Left", left: { _tag: "InvalidConfig", setting } })
      expect(String((result as { left: unknown }).left)).not.toContain("horse")
    })
  }

  it.effect("the layer fails with the InvalidConfig", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(TokenStore.layerRedis({ redis, timeout: -1 })))
      expect(error).toMatchObject({ _tag: "InvalidConfig", setting: "tokenStore.timeout" })
    }).pipe(Effect.scoped))

  it("a sealing key is 32 bytes, given as bytes, base64 (padded or url-safe) or hex, plain or redacted", () => {
    const bytes = Uint8Array.from({ length: 32 }, (_, i) => i * 7)
    const forms: ReadonlyArray<unknown> = [
      bytes,
      Redacted.make(bytes),
      Buffer.from(bytes).toString("base64"),
      Buffer.from(bytes).toString("base64url"),
      Redacted.make(Buffer.from(bytes).toString("hex").toUpperCase())
    ]
    for (const form of forms) {
      const key = StoredEntry.sealingKey(form)
      expect(key._tag).toBe("Right")
      expect([...Redacted.value((key as { right: StoredEntry.SealingKey }).right)]).toEqual([...bytes])
    }
    expect(StoredEntry.sealingKey(new Uint8Array(31))._tag).toBe("Left")
    expect(StoredEntry.sealingKey(42)._tag).toBe("Left")
  })

  it("an entry reads back as written, sealed or not; a seal is bound to its key name", () => {
    const entry: StoredEntry.Entry = {
      token: Redacted.make("abc.DEF/+="),
      lifetimeMillis: 3_600_000,
      serverLifetimeMillis: 7_200_000,
      serverClockSkewMillis: undefined
    }
    const key = Either.getOrThrow(StoredEntry.sealingKey(Keys.sealingKey(9)))
    const read = Either.right({ entry, fingerprint: TokenStore.fingerprint(entry.token) })
    expect(StoredEntry.decode(StoredEntry.encode(entry, undefined, "k"), undefined, "k")).toEqual(read)
    const sealed = StoredEntry.encode(entry, key, "k")
    expect(sealed).not.toContain("abc.DEF")
    expect(StoredEntry.decode(sealed, key, "k")).toEqual(read)
    // The same sealed value copied under another name does not open.
    expect(StoredEntry.decode(sealed, key, "other")._tag).toBe("Left")
    // Two seals of one entry differ (a fresh IV each time).
    expect(StoredEntry.encode(entry, key, "k")).not.toBe(sealed)
  })

  it("a stored entry with a zero, negative or infinite lifetime, or an infinite clock skew, is unreadable (issue 24's audit)", () => {
    const token = "abc.DEF"
    const stored = (fields: Record<string, string>) => {
      const json = `{"token":"${token}","lifetimeMillis":${fields.lifetime ?? "3600000"},` +
        `"serverLifetimeMillis":${fields.serverLifetime ?? "3600000"},"serverClockSkewMillis":${fields.skew ?? "null"}}`
      return `${TokenStore.fingerprint(Redacted.make(token))}|${json}`
    }
    expect(StoredEntry.decode(stored({}), undefined, "k")._tag).toBe("Right")
    // JSON has no Infinity, but 1e999 parses as it.
    for (const lifetime of ["0", "-1", "1e999"]) {
      expect(StoredEntry.decode(stored({ lifetime }), undefined, "k"), lifetime).toEqual(
        Either.left({ reason: "the stored token's lifetime is not a positive number", sealedOtherwise: false })
      )
      expect(StoredEntry.decode(stored({ serverLifetime: lifetime }), undefined, "k")._tag, lifetime).toBe("Left")
    }
    for (const skew of ["1e999", "-1e999", "\"5\""]) {
      expect(StoredEntry.decode(stored({ skew }), undefined, "k"), skew).toEqual(
        Either.left({ reason: "the stored token's clock skew is not a number", sealedOtherwise: false })
      )
    }
  })
})

describe("sealing keys too weak to seal with (issue 22)", () => {
  it("a key of one byte repeated, or of fewer than 16 different bytes, is refused without being echoed", () => {
    const weak: ReadonlyArray<readonly [string, unknown]> = [
      ["32 zero bytes", new Uint8Array(32)],
      ["64 zeros in hex", "0".repeat(64)],
      ["one base64 letter repeated", `${"A".repeat(43)}=`],
      ["one byte repeated, redacted", Redacted.make(Buffer.alloc(32, 7).toString("base64"))],
      ["15 different bytes", Uint8Array.from({ length: 32 }, (_, i) => i % 15)]
    ]
    const redis = TokenStore.ioredis({ call: () => Promise.resolve(null) })
    for (const [title, value] of weak) {
      const result = TokenStore.redis({ redis, sealingKey: value as string })
      expect(result, title).toMatchObject({
        _tag: "Left",
        left: { _tag: "InvalidConfig", setting: "tokenStore.sealingKey" }
      })
      const message = String((result as { left: unknown }).left)
      expect(message).toContain("openssl rand -base64 32")
      expect(message).not.toContain("AAAAAAAA")
      expect(message).not.toContain("00000000")
    }
    // 16 different bytes, and keys made as the docs say, are taken.
    expect(StoredEntry.sealingKey(Uint8Array.from({ length: 32 }, (_, i) => i % 16))._tag).toBe("Right")
    for (let i = 0; i < 100; i++) {
      expect(StoredEntry.sealingKey(Crypto.randomBytes(32).toString("base64"))._tag).toBe("Right")
    }
  })
})
