/** Reading JSON a server wrote: depth is measured and values are rendered without unbounded recursion. */
import { describe, expect, it } from "@effect/vitest"
import * as Json from "../core/json.js"

const nested = (levels: number): unknown => JSON.parse(`${"[".repeat(levels)}${"]".repeat(levels)}`)

describe("Json", () => {
  it("parses without throwing, even 100,000 levels deep", () => {
    expect(Json.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`)).toBeDefined()
    expect(Json.parse("null")).toEqual({ value: null })
    expect(Json.parse("\ufeff{\"a\":1}")).toEqual({ value: { a: 1 } })
    expect(Json.parse("{not json")).toBeUndefined()
    expect(Json.parse(undefined)).toBeUndefined()
  })

  it("deeperThan counts levels of objects and arrays, scalars being level 0", () => {
    expect(Json.deeperThan(5, 0)).toBe(false)
    expect(Json.deeperThan(nested(64), 64)).toBe(false)
    expect(Json.deeperThan(nested(65), 64)).toBe(true)
    expect(Json.deeperThan({ a: [{ b: {} }] }, 3)).toBe(true)
    expect(Json.deeperThan({ a: [{ b: 1 }] }, 3)).toBe(false)
    expect(Json.deeperThan(nested(100_000), 64)).toBe(true)
  })

  it("deeperThan finds a deep path anywhere (objects or arrays, last of many siblings), at any depth", () => {
    const objects = (levels: number): unknown =>
      JSON.parse(`${"{\"a\":".repeat(levels - 1)}{}${"}".repeat(levels - 1)}`)
    expect(Json.deeperThan(objects(64), 64)).toBe(false)
    expect(Json.deeperThan(objects(65), 64)).toBe(true)
    expect(Json.deeperThan(objects(100_000), 64)).toBe(true)
    const wide = (last: unknown) => ({ items: [...Array.from({ length: 50 }, () => ({ x: [1, { y: 2 }] })), last] })
    expect(Json.deeperThan(wide(nested(62)), 64)).toBe(false)
    expect(Json.deeperThan(wide(nested(63)), 64)).toBe(true)
    expect(Json.deeperThan(wide(nested(100_000)), 64)).toBe(true)
    expect(Json.deeperThan({}, 0)).toBe(true)
    expect(Json.deeperThan({ a: 1 }, 1)).toBe(false)
  })

  it("render keeps strings, and bounds any other value in depth and length", () => {
    expect(Json.render("as it is")).toBe("as it is")
    expect(Json.render({ a: [1, "b", null, true] })).toBe("{\"a\":[1,\"b\",null,true]}")
    expect(Json.render(nested(100_000))).toBe("[[[[[[[[[...]]]]]]]]]")
    const long = Json.render(Array.from({ length: 10_000 }, (_, i) => i))
    expect(long.length).toBeLessThanOrEqual(503)
    expect(long.endsWith("...")).toBe(true)
  })

  it("field reads a name exactly, then in any letter case", () => {
    expect(Json.field({ Success: 1, success: 2 }, "success")).toBe(2)
    expect(Json.field({ SUCCESS: 3 }, "Success")).toBe(3)
    expect(Json.field({}, "Success")).toBeUndefined()
  })
})
