/**
 * The combinators and modules core's runners are written over (core/effects.ts: the sharing
 * runner, the token keeper), held against a line's modules: each name core reads is there, a
 * function or an effect. `Effects.of` and `Effects.common` are casts, so this is what tells a line
 * that lacks one.
 */
import * as assert from "node:assert/strict"
import { MODULE_NAMES, type Modules, NAMES } from "../core/effects.js"
import type { Runner } from "./driver.js"

/** The names of `module` core reads that are missing: neither a function nor an object. */
const missing = (module: object, names: ReadonlyArray<string>): ReadonlyArray<string> =>
  names.filter((name) => {
    const value = (module as Record<string, unknown>)[name]
    return typeof value !== "function" && (typeof value !== "object" || value === null)
  })

export const effectsModule = ({ describe, it }: Runner, modules: Modules): void => {
  describe("the combinators and modules core's runners use", () => {
    it("the line's Effect module has every combinator, under core's name", async () => {
      assert.deepEqual(missing(modules.Effect, NAMES), [])
    })

    it("its Clock, Random, Deferred and Redacted have what core reads of them", async () => {
      for (const [module, names] of Object.entries(MODULE_NAMES)) {
        assert.deepEqual(missing(modules[module as keyof typeof MODULE_NAMES], names), [], module)
      }
    })
  })
}
