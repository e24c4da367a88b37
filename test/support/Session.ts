/**
 * A documented command-line session, run as written: each `$ ` line of a ```console block is a
 * shell command, run in order in one directory with `effect-clinical` on the PATH (the built bin),
 * and what follows it is what it must print (stdout and stderr together). The parts that change from
 * run to run (ports, times, durations, rates) are compared by shape.
 */
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { expect } from "vitest"
import { blocks } from "../../scripts/snippets.js"
import { BIN } from "./Cli.js"

/** The one ```console block of `markdown`: each command with the output it shows. */
export const session = (
  markdown: string,
  name: string
): ReadonlyArray<{ readonly command: string; readonly output: string }> => {
  const console = blocks(markdown).filter((block) => block.language === "console")
  expect(console, `${name} has one \`\`\`console block: the command-line session`).toHaveLength(1)
  const steps: Array<{ command: string; output: Array<string> }> = []
  for (const line of console[0]!.text.split("\n")) {
    if (line.startsWith("$ ")) steps.push({ command: line.slice(2), output: [] })
    else steps.at(-1)!.output.push(line)
  }
  return steps.map(({ command, output }) => ({ command, output: output.join("\n") }))
}

/** The text with what differs between runs replaced by its kind. */
export const shape = (text: string): string =>
  text
    .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:<port>")
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, "<time>")
    .replace(/[+-]?\d+(\.\d+)? (ms|s)\b/g, "<duration>")
    .replace(/\d+(\.\d+)?\/s/g, "<rate>")
    .replace(/(ahead of|behind) this machine/g, "<skew> this machine")
    .trimEnd()

/** A directory whose `bin/effect-clinical` runs the built executable. */
export const binDirectory = (dir: string): string => {
  const bin = Path.join(dir, "bin")
  Fs.mkdirSync(bin)
  Fs.writeFileSync(Path.join(bin, "effect-clinical"), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, {
    mode: 0o755
  })
  return bin
}

/** Runs every step of `steps` in `cwd` with `env`, checking each one's output by shape. */
export const runSession = async (
  steps: ReadonlyArray<{ readonly command: string; readonly output: string }>,
  cwd: string,
  env: Record<string, string>,
  shaped: (text: string) => string = shape
): Promise<void> => {
  for (const { command, output } of steps) {
    // Asynchronously: the mock answers from this process, so its event loop must keep running.
    const printed = await new Promise<string>((resolve) =>
      execFile(
        "sh",
        ["-c", `exec 2>&1\n${command}`],
        { cwd, env, encoding: "utf8" },
        (_error, stdout) => resolve(stdout)
      )
    )
    expect(shaped(printed), `$ ${command}`).toBe(shaped(output))
  }
}
