/** core/token/accessToken: a `maxWait` read as the token service takes it, and a lifetime cut by maxTokenLifetime. */
import { describe, expect, it } from "vitest"
import { lifetimeCut, maxWaitMillisOf } from "../core/token/accessToken.js"

const refusal = {
  _tag: "InvalidRequest",
  operation: "token",
  field: "maxWait",
  reason: "must be a duration, e.g. \"5 seconds\""
}

describe("maxWaitMillisOf", () => {
  // As Effect's Duration decodes: negative numbers as 0, text by its own forms.
  const decode = (value: unknown): number | undefined =>
    typeof value === "number"
      ? Math.max(0, value)
      : typeof value === "string" && value.trim() === "-5 seconds"
      ? 0
      : value === "5 seconds"
      ? 5_000
      : value === "7"
      ? 7
      : undefined

  it("a number of milliseconds as it is, text through the line's decoder", () => {
    expect(maxWaitMillisOf(250, () => 1)).toBe(250)
    expect(maxWaitMillisOf(0, () => 1)).toBe(0)
    expect(maxWaitMillisOf("5 seconds", decode)).toBe(5_000)
    // Text that reads as a number is decoded, not taken as it is.
    expect(maxWaitMillisOf("7", decode)).toBe(7)
  })

  it("a negative wait, in a number or in text (spaces before the sign too), or no duration at all, is refused", () => {
    for (const maxWait of [-1, Number.NaN, "-5 seconds", "  -5 seconds", "soon", undefined, {}]) {
      expect(maxWaitMillisOf(maxWait, decode)).toEqual(refusal)
    }
  })
})

describe("lifetimeCut", () => {
  it("the server's lifetime and the one used, in seconds, when maxTokenLifetime cut it; else nothing", () => {
    expect(lifetimeCut({ lifetimeMillis: 1_800_400, serverLifetimeMillis: 3_600_600 })).toEqual({
      serverLifetimeSeconds: 3_601,
      lifetimeSeconds: 1_800
    })
    expect(lifetimeCut({ lifetimeMillis: 3_600_000, serverLifetimeMillis: 3_600_000 })).toBeUndefined()
  })
})
