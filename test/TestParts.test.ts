/**
 * `scripts/test-parts.mjs`, which `npm test` and `.ci/run` run before any test: on a PATH that lacks
 * the Debian parts, it stops with one message naming each missing package and the line that
 * installs them (exit 1); where apt-get can run, it installs exactly what is missing. Run as a
 * process, as npm runs it, with PATHs made for each case (a fake apt-get and sudo, never the real).
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { ensureParts } from "../scripts/test-parts.mjs"

const script = Path.resolve(import.meta.dirname, "../scripts/test-parts.mjs")
const ALL = ["redis-server", "tinyproxy", "openssl", "chromium", "curl"]
const root = process.getuid?.() === 0
const sudo = root ? "" : "sudo "

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) Fs.rmSync(dir, { recursive: true, force: true })
})

const tempDir = (): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "test-parts-"))
  dirs.push(dir)
  return dir
}

/** A directory holding an executable stub for each of `programs`. */
const withPrograms = (...programs: ReadonlyArray<string>): string => {
  const dir = tempDir()
  for (const program of programs) Fs.writeFileSync(Path.join(dir, program), "#!/bin/sh\nexit 0\n", { mode: 0o755 })
  return dir
}

/**
 * A fake apt-get (a Node script with an absolute shebang: the PATH it runs with has no node): it
 * logs its arguments, one call a line, and `install` makes each package's program in `into`
 * unless `fail` (then it exits 100, as apt-get does when a package cannot be had).
 */
const fakeAptGet = (into: string, fail = false): { readonly dir: string; readonly calls: () => Array<string> } => {
  const dir = tempDir()
  const log = Path.join(dir, "calls.log")
  Fs.writeFileSync(
    Path.join(dir, "apt-get"),
    `#!${process.execPath}
const fs = require("node:fs")
const args = process.argv.slice(2)
fs.appendFileSync(${JSON.stringify(log)}, args.join(" ") + " DEBIAN_FRONTEND=" + process.env.DEBIAN_FRONTEND + "\\n")
if (args[0] === "install") {
  if (${fail}) { console.error("E: Unable to locate package chromium"); process.exit(100) }
  for (const name of args.filter((arg) => !arg.startsWith("-") && arg !== "install")) {
    fs.writeFileSync(${JSON.stringify(into)} + "/" + name, "#!/bin/sh\\nexit 0\\n", { mode: 0o755 })
  }
}
`,
    { mode: 0o755 }
  )
  // Not root: a sudo that runs its command without asking (-n: never prompt).
  Fs.writeFileSync(
    Path.join(dir, "sudo"),
    `#!${process.execPath}
const args = process.argv.slice(2).filter((arg) => arg !== "-n")
if (args[0] === "true") process.exit(0)
const run = require("node:child_process").spawnSync(args[0], args.slice(1), { stdio: "inherit" })
process.exit(run.status ?? 1)
`,
    { mode: 0o755 }
  )
  return {
    dir,
    calls: () => Fs.existsSync(log) ? Fs.readFileSync(log, "utf8").trim().split("\n") : []
  }
}

const check = (path: string) => {
  const result = spawnSync(process.execPath, [script], {
    env: { PATH: path, HOME: Os.tmpdir() },
    encoding: "utf8",
    timeout: 20_000
  })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe("the parts npm test needs", () => {
  it("a PATH without any of them and no apt-get: one message naming each package and its install line, exit 1", () => {
    const { status, stdout, stderr } = check(tempDir())
    expect(status).toBe(1)
    expect(stdout).toBe("")
    expect(stderr).toContain(`npm test needs Debian packages that are not installed: ${ALL.join(", ")}.`)
    for (const name of ALL) expect(stderr).toMatch(new RegExp(`^  ${name}: `, "m"))
    expect(stderr).toContain("looked for chromium or chromium-browser on PATH")
    expect(stderr).toContain("apt-get is not on PATH, so they could not be installed here.")
    expect(stderr.trimEnd().split("\n").slice(-2)).toEqual([
      "Install with:",
      `  ${sudo}apt-get update && ${sudo}apt-get install -y ${ALL.join(" ")}`
    ])
  })

  it("only the missing ones are named; chromium-browser counts as chromium", () => {
    const { status, stderr } = check(withPrograms("redis-server", "openssl", "chromium-browser", "curl"))
    expect(status).toBe(1)
    expect(stderr).toContain("npm test needs a Debian package that is not installed: tinyproxy.")
    expect(stderr).toContain(`  ${sudo}apt-get update && ${sudo}apt-get install -y tinyproxy\n`)
    expect(stderr).not.toMatch(/^ {2}(redis-server|openssl|chromium|curl): /m)
  })

  it("all of them there: nothing printed, exit 0", () => {
    expect(check(withPrograms(...ALL))).toEqual({ status: 0, stdout: "", stderr: "" })
  })

  it("a program that is there but not executable does not count", () => {
    const dir = withPrograms("redis-server", "tinyproxy", "openssl", "chromium")
    Fs.writeFileSync(Path.join(dir, "curl"), "not a program", { mode: 0o644 })
    const { status, stderr } = check(dir)
    expect(status).toBe(1)
    expect(stderr).toContain("not installed: curl.")
  })

  it("where apt-get can run, exactly the missing packages are installed, non-interactively, and the tests go on", () => {
    const programs = withPrograms("openssl", "curl")
    const apt = fakeAptGet(programs)
    const { status, stderr } = check([programs, apt.dir].join(Path.delimiter))
    expect(status).toBe(0)
    expect(stderr).toBe(
      `npm test: installing Debian's redis-server, tinyproxy, chromium (${sudo}apt-get update && ${sudo}apt-get install -y redis-server tinyproxy chromium)\n`
    )
    expect(apt.calls()).toEqual([
      "update -qq DEBIAN_FRONTEND=noninteractive",
      "install -y -qq redis-server tinyproxy chromium DEBIAN_FRONTEND=noninteractive"
    ])
    for (const name of ["redis-server", "tinyproxy", "chromium"]) {
      expect(Fs.existsSync(Path.join(programs, name))).toBe(true)
    }
  })

  it("an install that fails: apt-get's last words, then the one message with what is still missing, exit 1", () => {
    const programs = withPrograms("redis-server", "tinyproxy", "openssl", "curl")
    const apt = fakeAptGet(programs, true)
    const { status, stderr } = check([programs, apt.dir].join(Path.delimiter))
    expect(status).toBe(1)
    expect(stderr).toContain("E: Unable to locate package chromium")
    expect(stderr).toContain("npm test needs a Debian package that is not installed: chromium.")
    expect(stderr).toContain("apt-get could not install them (exit 100).")
    expect(stderr.trimEnd().split("\n").at(-1)).toBe(`  ${sudo}apt-get update && ${sudo}apt-get install -y chromium`)
  })
})

describe("npm test and .ci/run", () => {
  const packageJson = JSON.parse(Fs.readFileSync(Path.resolve(import.meta.dirname, "../package.json"), "utf8"))
  const effect4Json = JSON.parse(Fs.readFileSync(Path.resolve(import.meta.dirname, "../effect4/package.json"), "utf8"))
  const ci = Fs.readFileSync(Path.resolve(import.meta.dirname, "../.ci/run"), "utf8")

  it("both packages' test commands check the parts before anything else; CI uses the same list", () => {
    expect(packageJson.scripts.test).toMatch(/^node scripts\/test-parts\.mjs && /)
    expect(effect4Json.scripts.test).toMatch(/^node \.\.\/scripts\/test-parts\.mjs && /)
    expect(ci).toContain("node scripts/test-parts.mjs")
    // One list: CI names no package of its own.
    expect(ci).not.toMatch(/apt-get install/)
  })
})

describe("the README's example of the message", () => {
  it("is what a user who is not root, whose sudo asks for a password, sees without redis-server and chromium", () => {
    const readme = Fs.readFileSync(Path.resolve(import.meta.dirname, "../README.md"), "utf8")
    const example = /installs them, for example:\n\n```\n([\s\S]*?)```/.exec(readme)?.[1]
    expect(example).toBeDefined()
    const programs = withPrograms("tinyproxy", "openssl", "curl")
    const apt = fakeAptGet(programs)
    // A sudo that would ask for a password: `sudo -n` fails.
    Fs.writeFileSync(Path.join(apt.dir, "sudo"), "#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n", {
      mode: 0o755
    })
    // As a process that is not root: switching the test's user instead would need every part of
    // the checkout and of Node readable by that user, which a CI checkout need not be.
    const lines: Array<string> = []
    const status = ensureParts({ PATH: [programs, apt.dir].join(Path.delimiter) }, (line) => lines.push(line), false)
    expect(status).toBe(1)
    expect(`${lines.join("\n")}\n`).toBe(example)
    expect(apt.calls()).toEqual([])
  })
})
