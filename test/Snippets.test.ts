/**
 * Every TypeScript snippet in README.md and docs/ is a region of a file the tests run (an example,
 * or a test under test/docs/), copied exactly: a wrong snippet fails here or in its source's test.
 * `npm run docs:snippets` rewrites the snippets from their sources.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { blocks, markdownFiles, regionText } from "../scripts/snippets.js"

const root = Path.resolve(import.meta.dirname, "..")

/**
 * Languages of blocks that are not TypeScript: shell lines, console sessions (run by
 * test/docs/CliSession.test.ts and the pages' own tests), plain output, and the alert rules of
 * docs/observability.md (yaml: checked against real scrapes by test/docs/WatchingRun.test.ts).
 */
const UNCHECKED = new Set(["sh", "console", "text", "yaml", ""])

describe("snippets in README.md and docs/", () => {
  it("every code block is TypeScript (checked below) or shell, console, plain text or alert rules: no unchecked JavaScript", () => {
    for (const file of markdownFiles(root)) {
      for (const block of blocks(Fs.readFileSync(Path.join(root, file), "utf8"))) {
        if (block.language === "ts") continue
        expect(UNCHECKED.has(block.language), `${file}:${block.start + 1} is a \`\`\`${block.language} block`).toBe(
          true
        )
      }
    }
  })

  for (const file of markdownFiles(root)) {
    const code = blocks(Fs.readFileSync(Path.join(root, file), "utf8")).filter((block) => block.language === "ts")
    if (code.length === 0) continue
    it(`${file}: each of its ${code.length} TypeScript snippet(s) is a region of a tested file, unchanged`, () => {
      for (const block of code) {
        const where = `${file}, the block at line ${block.start + 1}`
        expect(block.source, `${where} has no <!-- snippet: file#region --> marker`).toBeDefined()
        const source = regionText(root, block.source!.file, block.source!.region)
        expect(block.text, `${where} differs from ${block.source!.file}; run npm run docs:snippets`).toBe(source)
        // Each line's examples and tests: the Effect 4 line's run in its own package.
        const tested = /^(effect4\/)?examples\//.test(block.source!.file) ||
          /^(effect4\/)?test\/.*\.test\.ts$/.test(block.source!.file)
        expect(tested, `${block.source!.file} is neither an example nor a test`).toBe(true)
      }
    })
  }
})
