import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Skipped or focused tests must never land unnoticed; every run in a random order.
    allowOnly: false,
    sequence: { shuffle: true },
    maxWorkers: 2,
    passWithNoTests: false,
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-report.json" }
  }
})
