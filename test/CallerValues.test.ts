/**
 * What the Promise client recognises in what a JavaScript caller hands over (src/internal/callerValues.ts),
 * as pure functions: thenables, AbortSignals, and the level name a logger is given.
 */
import { LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { isAbortSignal, isThenable, levelName } from "../src/internal/callerValues.js"

describe("isThenable", () => {
  it("an object or a function with a then method, and nothing else", () => {
    const then = () => {}
    for (const value of [Promise.resolve(1), { then }, Object.assign(() => {}, { then })]) {
      expect(isThenable(value)).toBe(true)
    }
    for (const value of [undefined, null, 0, "text", true, Symbol("s"), 1n, {}, { then: 1 }, () => {}, []]) {
      expect(isThenable(value), String(value)).toBe(false)
    }
  })
})

describe("isAbortSignal", () => {
  /** An object tagged as an AbortSignal, with what it lacks left out. */
  const tagged = (without?: "aborted" | "addEventListener" | "removeEventListener") => {
    const signal: Record<PropertyKey, unknown> = {
      [Symbol.toStringTag]: "AbortSignal",
      aborted: false,
      addEventListener: () => {},
      removeEventListener: () => {}
    }
    if (without !== undefined) delete signal[without]
    return signal
  }

  it("a real signal, aborted or not, and one from AbortSignal.timeout", () => {
    const controller = new AbortController()
    expect(isAbortSignal(controller.signal)).toBe(true)
    controller.abort()
    expect(isAbortSignal(controller.signal)).toBe(true)
    expect(isAbortSignal(AbortSignal.timeout(1000))).toBe(true)
  })

  it("not what only looks like one: each of aborted, addEventListener, removeEventListener is needed", () => {
    expect(isAbortSignal(tagged())).toBe(true)
    for (const without of ["aborted", "addEventListener", "removeEventListener"] as const) {
      expect(isAbortSignal(tagged(without)), without).toBe(false)
    }
    expect(isAbortSignal({ ...tagged(), aborted: "no" })).toBe(false)
    expect(isAbortSignal({ ...tagged(), addEventListener: 1 })).toBe(false)
    expect(isAbortSignal({ ...tagged(), removeEventListener: "x" })).toBe(false)
    // Everything a signal has, but not its tag.
    const { [Symbol.toStringTag]: _, ...untagged } = tagged()
    expect(isAbortSignal(untagged)).toBe(false)
    for (const value of [undefined, null, "AbortSignal", 1, new EventTarget()]) {
      expect(isAbortSignal(value), String(value)).toBe(false)
    }
  })
})

describe("levelName", () => {
  it("each of Effect's levels as the level a logger gets", () => {
    expect(
      [LogLevel.Trace, LogLevel.Debug, LogLevel.Info, LogLevel.Warning, LogLevel.Error, LogLevel.Fatal].map(levelName)
    ).toEqual(["debug", "debug", "info", "warn", "error", "error"])
  })
})
