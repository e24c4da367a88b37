/**
 * The help as `@effect/cli` renders it, made fit for a terminal and a pipe (pure): colour only
 * where it is wanted, lines that fit the width, and usage lines that say how to run the command
 * (`$ effect-clinical medications ...`, not `$ medications ...`). `@effect/cli` 0.77 has no option
 * for any of these.
 */

/** The widest line of help. */
export const HELP_WIDTH = 100

/** SGR sequences, the only escapes `@effect/cli`'s help holds (our own output holds none: see render.ts). */
const SGR = /\u001b\[[0-9;]*m/g

/** Text without colour. */
export const withoutColour = (text: string): string => text.replace(SGR, "")

/**
 * Whether colour is wanted on a stream: a terminal, and no `NO_COLOR` (https://no-color.org: set
 * and not empty), and not `TERM=dumb`.
 */
export const colourWanted = (isTerminal: boolean, env: Readonly<Record<string, string | undefined>>): boolean =>
  isTerminal && (env.NO_COLOR ?? "") === "" && env.TERM !== "dumb"

/** Whether these arguments ask for help (or give nothing, which shows it). */
export const asksForHelp = (args: ReadonlyArray<string>): boolean =>
  args.length === 0 || args.some((arg) => arg === "--help" || arg === "-h")

/**
 * Splits text into words at spaces outside `[...]` and `<...>`, so that `[--format table | json]`
 * stays whole on a line.
 */
const usageWords = (text: string): Array<string> => {
  const words: Array<string> = []
  let depth = 0
  let word = ""
  for (const char of text) {
    if (char === "[" || char === "<") depth++
    if (char === "]" || char === ">") depth = Math.max(0, depth - 1)
    if (char === " " && depth === 0) {
      if (word !== "") words.push(word)
      word = ""
    } else {
      word += char
    }
  }
  if (word !== "") words.push(word)
  return words
}

/**
 * Words (without colour) laid out in lines of at most `width` columns (a longer word alone on its
 * line), the first after `indent`, the others after `next`.
 */
const wrap = (words: ReadonlyArray<string>, indent: string, next: string, width: number): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of words) {
    const lead = lines.length === 0 ? indent : next
    if (line !== "" && lead.length + line.length + 1 + word.length > width) {
      lines.push(lead + line)
      line = word
    } else {
      line = line === "" ? word : `${line} ${word}`
    }
  }
  if (line !== "" || lines.length === 0) lines.push((lines.length === 0 ? indent : next) + line)
  return lines
}

/** A command of the list: `  - <usage>   <description>`, the two apart by a run of spaces. */
/** The words of `path` before the command a usage line starts with: `queue` of `queue work`. */
const parentsOf = (path: ReadonlyArray<string>, usage: string): ReadonlyArray<string> => {
  const command = usage.split(" ", 1)[0]
  const at = path.lastIndexOf(command ?? "")
  return at > 0 ? path.slice(0, at) : []
}

/** The command words of `args`: those before the first option. */
export const commandPath = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const words: Array<string> = []
  for (const arg of args) {
    if (arg.startsWith("-")) break
    words.push(arg)
  }
  return words
}

const COMMAND_ENTRY = /^(\s*)- (.*?\S)\s{2,}(\S.*)$/

/** The help, fit: colour removed unless `colour`, every line within `width`, usage lines prefixed with `name`. */
export const fitHelp = (
  text: string,
  options: {
    readonly colour: boolean
    readonly name: string
    /** The command words typed (`queue work`): @effect/cli's usage line names the last one alone. */
    readonly path?: ReadonlyArray<string>
    readonly width?: number
  }
): string => {
  const width = options.width ?? HELP_WIDTH
  const plain = options.colour ? text : withoutColour(text)
  const out: Array<string> = []
  // Lines that continue a command's description (its "Example: ..." line) are indented under it.
  let describing: string | undefined
  for (const line of plain.split("\n")) {
    const content = withoutColour(line)
    if (content.trim() === "") {
      describing = undefined
      out.push(line)
      continue
    }
    if (content.startsWith("$ ")) {
      const usage = content.startsWith(`$ ${options.name}`)
        ? content.slice(2)
        : `${[options.name, ...parentsOf(options.path ?? [], content.slice(2))].join(" ")} ${content.slice(2)}`
      out.push(...wrap(usageWords(usage), "$ ", "    ", width))
      continue
    }
    const entry = COMMAND_ENTRY.exec(content)
    if (entry !== null) {
      const [, indent = "", usage = "", description = ""] = entry
      describing = `${indent}    `
      out.push(...wrap(usageWords(usage), `${indent}- `, `${indent}      `, width))
      out.push(...wrap(description.split(" "), describing, describing, width))
      continue
    }
    const indent = describing ?? /^\s*/.exec(content)![0]
    if (describing === undefined && content.length <= width) {
      out.push(line)
      continue
    }
    out.push(...wrap(content.trim().split(" "), indent, indent, width))
  }
  return out.join("\n")
}
