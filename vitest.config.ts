import * as Path from "node:path"
import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // Tests and examples import the package by name, exactly as users do.
    alias: { "effect-clinical": Path.resolve(import.meta.dirname, "src/index.ts") }
  },
  test: {
    include: ["test/**/*.test.ts"],
    // Skipped or focused tests must never land unnoticed.
    allowOnly: false,
    passWithNoTests: false
  }
})
