/** core/url: the origin and path undici's dispatch takes, and a URL's path alone (the mock's routing). */
import { describe, expect, it } from "vitest"
import { pathOf, splitUrl } from "../core/url.js"

describe("splitUrl", () => {
  it("the origin, and the path with its query; an origin alone has the path /", () => {
    expect(splitUrl("https://clinical.example:8443")).toEqual({ origin: "https://clinical.example:8443", path: "/" })
    expect(splitUrl("https://clinical.example:8443/api/Server/Token?x=1")).toEqual({
      origin: "https://clinical.example:8443",
      path: "/api/Server/Token?x=1"
    })
    expect(splitUrl("http://127.0.0.1:1/")).toEqual({ origin: "http://127.0.0.1:1", path: "/" })
  })
})

describe("pathOf", () => {
  it("the path without its query or fragment; an origin alone is /", () => {
    expect(pathOf("https://clinical.example/api/clinical/medication/get?a=1#b")).toBe("/api/clinical/medication/get")
    expect(pathOf("https://clinical.example/api/x#frag")).toBe("/api/x")
    expect(pathOf("https://clinical.example/api/x")).toBe("/api/x")
    expect(pathOf("https://clinical.example")).toBe("/")
  })
})
