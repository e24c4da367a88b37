/**
 * `effect-clinical --help` and usage errors, run as a user runs it (the built bin, a child process):
 * every command documented with an example, piped and at a terminal, exit 2, and no secret typed in
 * the wrong place echoed back.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import { APP, dir, ELEANOR, envOf, file, MARCUS, mock, setUpCli } from "./support/cliFixtures.js"
import { expectNone } from "./support/Leaks.js"

setUpCli()

describe("effect-clinical --help", { timeout: 60_000 }, () => {
  it("documents every command, each with an example, and the exit codes", async () => {
    const root = await Cli.run(["--help"])
    expect(root.code).toBe(0)
    expect(root.stdout).toContain("130 interrupted")
    const commands = [
      "token",
      "authenticate",
      "medications",
      "ethnicities",
      "detailed-ethnicities",
      "unique-device-identifiers",
      "batch",
      "probe",
      "mock-server"
    ]
    const helps = await Promise.all(commands.map((command) => Cli.run([command, "--help"])))
    const docs = Fs.readFileSync(Path.resolve(import.meta.dirname, "../docs/cli.md"), "utf8")
    helps.forEach((help, i) => {
      const command = commands[i]!
      expect(help.code, command).toBe(0)
      expect(help.stdout, command).toContain("Example: ")
      expect(help.stdout, command).toContain(`effect-clinical ${command}`)
      // docs/cli.md documents every option the command takes.
      // The usage line and its continuation lines, up to the blank line after them.
      const usage = help.stdout.slice(help.stdout.indexOf("\n$ ")).split("\n\n")[0]!
      for (const option of usage.match(/--[a-z-]+/g) ?? []) {
        expect(docs, `${command} ${option}`).toContain(`\`${option}`)
      }
    })
  }, 60_000)

  it("piped: no ANSI codes, every line within 100 columns, each usage line starts with effect-clinical (issue 23)", async () => {
    const commands = ["token", "authenticate", "medications", "detailed-ethnicities", "batch", "probe", "mock-server"]
    // NO_COLOR unset: a pipe alone means no colour.
    const helps = await Promise.all(
      [[], ["--help"], ...commands.map((command) => [command, "--help"])].map((args) =>
        Cli.run(args, { env: { NO_COLOR: "" } })
      )
    )
    helps.forEach((help, i) => {
      expect(help.code).toBe(0)
      expect(help.stdout).not.toContain("\u001b")
      for (const line of help.stdout.split("\n")) expect(line.length, line).toBeLessThanOrEqual(100)
      const usage = help.stdout.split("\n").find((line) => line.startsWith("$ "))
      expect(usage).toMatch(i < 2 ? /^\$ effect-clinical$/ : new RegExp(`^\\$ effect-clinical ${commands[i - 2]}( |$)`))
    })
  })

  it("at a terminal: colour, unless NO_COLOR is set (issue 23)", async () => {
    const atTerminal = (env: Record<string, string>) =>
      new Promise<string>((resolve) => {
        const child = spawn("script", ["-qec", `"${process.execPath}" "${Cli.BIN}" --help`, "/dev/null"], {
          env: { PATH: process.env.PATH ?? "", TERM: "xterm", ...env }
        })
        let screen = ""
        child.stdout.on("data", (chunk: Buffer) => screen += chunk.toString("utf8"))
        child.on("close", () => resolve(screen))
      })
    const [coloured, plain] = await Promise.all([atTerminal({}), atTerminal({ NO_COLOR: "1" })])
    expect(coloured).toContain("\u001b[")
    expect(plain).toContain("COMMANDS")
    expect(plain).not.toContain("\u001b")
  })

  it("a usage error exits 2: an unknown command, an unknown option, an unknown batch operation", async () => {
    expect((await Cli.run(["nonsense"])).code).toBe(2)
    expect((await Cli.run(["token", "--applicationid", APP], { env: envOf(mock.url) })).code).toBe(2)
    const batch = await Cli.run([
      "batch",
      "allergies",
      "--persons-file",
      file("p0.txt", "x\n"),
      "--out",
      Path.join(dir, "o0")
    ], {
      env: envOf(mock.url)
    })
    expect(batch.code).toBe(2)
    expect(batch.stderr).toContain(`unknown operation "allergies"`)
  })

  it("a secret typed where it does not belong is never echoed back in the usage error", async () => {
    const mistakes = [
      ["token", `--application-id=${APP}`],
      ["token", `--reveal=${APP}`],
      ["authenticate", ELEANOR!.passCode, ELEANOR!.dateOfBirth],
      ["probe", ELEANOR!.personUid, MARCUS!.personUid],
      ["medications", "--persons-file", ELEANOR!.personUid],
      ["batch", "medications", ELEANOR!.personUid, "--persons-file", "x", "--out", "y"],
      // A value holding a quote or a line break, which pairs the usage error's quotes otherwise (from review).
      ["medications", "--persons-file", `/nope/a'${ELEANOR!.personUid}`],
      ["batch", "medications", "--concurrency", `1'${APP}`, "--persons-file", "x", "--out", "y"],
      ["medications", "--persons-file", `/nope/a\n${APP}'x`]
    ]
    const runs = await Promise.all(mistakes.map((args) => Cli.run(args, { env: envOf(mock.url) })))
    runs.forEach((ran, i) => {
      expect(ran.code, mistakes[i]!.join(" ")).toBe(2)
      expectNone(`${mistakes[i]![0]} stderr`, ran.stderr, [
        APP,
        ELEANOR!.personUid,
        ELEANOR!.passCode,
        ELEANOR!.dateOfBirth
      ])
      expectNone(`${mistakes[i]![0]} stdout`, ran.stdout, [
        APP,
        ELEANOR!.personUid,
        ELEANOR!.passCode,
        ELEANOR!.dateOfBirth
      ])
    })
  })
})
