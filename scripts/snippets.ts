/**
 * Code in README.md and docs/ is generated from code the tests run, so that no snippet can be
 * wrong. A ```ts block in Markdown is preceded by a marker naming where it comes from:
 *
 *   <!-- snippet: test/docs/Readme.test.ts#getting-a-personuid -->
 *
 * and its text is that region of the file (between `// #region getting-a-personuid` and
 * `// #endregion`), dedented; without `#region`, the whole file. `test/Snippets.test.ts` fails when
 * a block differs from its source or has no marker; `npm run docs:snippets` rewrites the blocks.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The Markdown files whose snippets are checked. */
export const markdownFiles = (root: string): ReadonlyArray<string> => [
  "README.md",
  "effect4/README.md",
  ...Fs.readdirSync(Path.join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)
]

const MARKER = /^<!-- snippet: ([^#\s]+)(?:#([\w-]+))? -->$/

/** One code block of a Markdown file, with the marker before it (if any). */
export interface Block {
  readonly language: string
  /** Lines of the file: the opening fence, the first line after the closing fence. */
  readonly start: number
  readonly end: number
  readonly text: string
  readonly source: { readonly file: string; readonly region: string | undefined } | undefined
}

/** The fenced code blocks of a Markdown text. */
export const blocks = (markdown: string): ReadonlyArray<Block> => {
  const lines = markdown.split("\n")
  const found: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)$/.exec(lines[i]!)
    if (open === null) continue
    const close = lines.findIndex((line, j) => j > i && line === "```")
    if (close < 0) break
    const marker = MARKER.exec(lines[i - 1] ?? "")
    found.push({
      language: open[1]!,
      start: i,
      end: close + 1,
      text: lines.slice(i + 1, close).join("\n"),
      source: marker === null ? undefined : { file: marker[1]!, region: marker[2] }
    })
    i = close
  }
  return found
}

/** Removes the indentation every non-blank line shares. */
const dedent = (lines: ReadonlyArray<string>): string => {
  const indents = lines.filter((line) => line.trim() !== "").map((line) => /^ */.exec(line)![0].length)
  const cut = indents.length === 0 ? 0 : Math.min(...indents)
  return lines.map((line) => line.slice(cut)).join("\n")
}

/** The text of a region of a source file (the whole file without a region), or why it cannot be found. */
export const regionText = (root: string, file: string, region: string | undefined): string => {
  const path = Path.join(root, file)
  if (!Fs.existsSync(path)) throw new Error(`snippet source ${file} does not exist`)
  const content = Fs.readFileSync(path, "utf8").replace(/\n+$/, "")
  if (region === undefined) return content
  const lines = content.split("\n")
  const start = lines.findIndex((line) => line.trim() === `// #region ${region}`)
  const end = lines.findIndex((line, i) => i > start && line.trim() === "// #endregion")
  if (start < 0 || end < 0) throw new Error(`${file} has no region ${region}`)
  return dedent(lines.slice(start + 1, end))
}

/** The Markdown text with every marked block replaced by its source. */
export const regenerate = (root: string, markdown: string): string => {
  const lines = markdown.split("\n")
  for (const block of [...blocks(markdown)].reverse()) {
    if (block.source === undefined) continue
    const text = regionText(root, block.source.file, block.source.region)
    lines.splice(block.start + 1, block.end - block.start - 2, ...text.split("\n"))
  }
  return lines.join("\n")
}

if (process.argv[1]?.endsWith("snippets.ts")) {
  const root = Path.resolve(import.meta.dirname, "..")
  for (const file of markdownFiles(root)) {
    const path = Path.join(root, file)
    const before = Fs.readFileSync(path, "utf8")
    const after = regenerate(root, before)
    if (after !== before) {
      Fs.writeFileSync(path, after)
      console.log(`updated ${file}`)
    }
  }
}
