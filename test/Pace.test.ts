/** core/pace: the rate and the time left that progress lines and `queue status` print. */
import { describe, expect, it } from "vitest"
import { perSecond, timeLeftMillis } from "../core/pace.js"

describe("pace", () => {
  it("persons per second between two counts; none when no time passed", () => {
    expect(perSecond(10, 40, 2_000)).toBe(15)
    expect(perSecond(10, 10, 2_000)).toBe(0)
    expect(perSecond(10, 40, 0)).toBeUndefined()
  })

  it("the time left at a rate; none when nothing is left, nothing moves, or no rate is known", () => {
    expect(timeLeftMillis(30, 15)).toBe(2_000)
    expect(timeLeftMillis(0, 15)).toBeUndefined()
    expect(timeLeftMillis(30, 0)).toBeUndefined()
    expect(timeLeftMillis(30, undefined)).toBeUndefined()
  })
})
