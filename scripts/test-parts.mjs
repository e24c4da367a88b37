#!/usr/bin/env node
/**
 * The real parts the tests start themselves, from Debian's packages: the one list, checked before
 * any test by `npm test` (and by `.ci/run`). A missing part is installed with apt-get when this
 * process can (root, or sudo without a password); otherwise it stops, before the first test, with
 * one message naming each missing package and the line that installs them, and exits 1. A test
 * never skips itself because a part is missing: it fails, and this check is what comes first.
 *
 * Plain JavaScript with Node's own modules: it runs before anything is compiled, on any Node.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** Each part: the programs that count as it (any one), its Debian package, and what needs it. */
export const PARTS = [
  { programs: ["redis-server"], package: "redis-server", neededBy: "the token store's and the queue's tests" },
  { programs: ["tinyproxy"], package: "tinyproxy", neededBy: "the proxy tests" },
  { programs: ["openssl"], package: "openssl", neededBy: "the TLS tests' throwaway certificates" },
  { programs: ["chromium", "chromium-browser"], package: "chromium", neededBy: "the queue dashboard's browser test" },
  { programs: ["curl"], package: "curl", neededBy: "the scrape docs/observability.md shows" }
]

/** Where `program` is on `path` (an executable file), or `undefined`. */
export const which = (program, path) => {
  for (const dir of (path ?? "").split(Path.delimiter)) {
    if (dir === "") continue
    const candidate = Path.join(dir, program)
    try {
      if (Fs.statSync(candidate).isFile()) {
        Fs.accessSync(candidate, Fs.constants.X_OK)
        return candidate
      }
    } catch {
      // Not here.
    }
  }
  return undefined
}

/** The packages of the parts none of whose programs is on `path`. */
export const missingPackages = (path) =>
  PARTS.filter((part) => part.programs.every((program) => which(program, path) === undefined)).map((part) =>
    part.package
  )

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0

/** The line that installs `packages`: as root, apt-get itself; otherwise through sudo. */
export const installLine = (packages, root = isRoot()) => {
  const sudo = root ? "" : "sudo "
  return `${sudo}apt-get update && ${sudo}apt-get install -y ${packages.join(" ")}`
}

/** The one message for parts that are missing and were not installed (`why`: what was tried). */
export const missingMessage = (packages, why, root = isRoot()) =>
  [
    `npm test needs ${packages.length === 1 ? "a Debian package" : "Debian packages"} that ${
      packages.length === 1 ? "is" : "are"
    } not installed: ${packages.join(", ")}.`,
    ...PARTS.filter((part) => packages.includes(part.package)).map((part) =>
      `  ${part.package}: ${part.neededBy} (looked for ${part.programs.join(" or ")} on PATH)`
    ),
    why,
    "Install with:",
    `  ${installLine(packages, root)}`
  ].join("\n")

/**
 * Runs `command args` with no input, its output kept (apt's is long): its exit status (127: it could
 * not be started), and the output's last lines.
 */
const run = (command, args, env) => {
  const result = spawnSync(command, args, { stdio: ["ignore", "pipe", "pipe"], env, maxBuffer: 64 * 1024 * 1024 })
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.trimEnd().split("\n").slice(-15).join("\n")
  return { status: result.error === undefined ? result.status ?? 1 : 127, output }
}

/** How apt-get can be run here: `[command, ...prefix]`, or a sentence saying why not. */
const installer = (env, root) => {
  const aptGet = which("apt-get", env.PATH)
  if (aptGet === undefined) return "apt-get is not on PATH, so they could not be installed here."
  if (root) return [aptGet]
  const sudo = which("sudo", env.PATH)
  if (sudo !== undefined && run(sudo, ["-n", "true"], env).status === 0) return [sudo, "-n", aptGet]
  return "This process is not root and sudo asks for a password, so they could not be installed here."
}

/**
 * Checks the parts, installs what is missing when it can: the exit status, 0 when every part is
 * there. `root`: whether this process may run apt-get itself.
 */
export const ensureParts = (env = process.env, log = (line) => process.stderr.write(`${line}\n`), root = isRoot()) => {
  const missing = missingPackages(env.PATH)
  if (missing.length === 0) return 0
  const how = installer(env, root)
  if (typeof how === "string") {
    log(missingMessage(missing, how, root))
    return 1
  }
  log(`npm test: installing Debian's ${missing.join(", ")} (${installLine(missing, root)})`)
  const [command, ...prefix] = how
  const aptEnv = { ...env, DEBIAN_FRONTEND: "noninteractive" }
  const updated = run(command, [...prefix, "update", "-qq"], aptEnv)
  const installed = updated.status === 0
    ? run(command, [...prefix, "install", "-y", "-qq", ...missing], aptEnv)
    : updated
  const still = missingPackages(env.PATH)
  if (still.length === 0) return 0
  if (installed.output !== "") log(installed.output)
  log(missingMessage(still, `apt-get could not install them (exit ${installed.status}).`, root))
  return 1
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = ensureParts()
}
