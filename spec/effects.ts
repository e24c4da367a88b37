/**
 * The combinators core's runners are written over (core/effects.ts: the sharing runner, the token
 * keeper), held against a line's `Effect` module: each is there under its name, a function (or
 * `void`, an effect). `Effects.of` is a cast, so this is what tells a line that lacks one.
 */
import * as assert from "node:assert/strict"
import { NAMES } from "../core/effects.js"
import type { Runner } from "./driver.js"

export const effectsModule = ({ describe, it }: Runner, effectModule: Record<string, unknown>): void => {
  describe("the combinators core's runners use", () => {
    it("the line's Effect module has every one, under core's name", async () => {
      const missing = NAMES.filter((name) =>
        name === "void" ? typeof effectModule[name] !== "object" : typeof effectModule[name] !== "function"
      )
      assert.deepEqual(missing, [])
    })
  })
}
