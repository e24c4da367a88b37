/**
 * A real HTTP proxy for the tests: Debian's `tinyproxy` (`.ci/run` installs it when absent), in the
 * foreground on a free loopback port, with basic auth, logging every connection to a file the
 * tests read to prove a request went through it (a `CONNECT host:port` line per tunnel).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort, listening } from "./Ports.js"

export interface Tinyproxy {
  readonly port: number
  /** `http://127.0.0.1:<port>`: no credentials. */
  readonly origin: string
  /** `http://<user>:<password>@127.0.0.1:<port>`, percent-encoded. */
  readonly url: string
  readonly user: string
  readonly password: string
  /** The `CONNECT` requests it has logged so far (`host:port`), in order. */
  readonly tunnels: () => ReadonlyArray<string>
  /** Its whole log so far. */
  readonly log: () => string
  readonly stop: () => Promise<void>
}

export const start = async (
  credentials: { readonly user: string; readonly password: string } = { user: "clinic", password: "pr0xy-Pa55w0rd" },
  /** More lines of its configuration (`ConnectPort 443`: tunnels to that port alone). */
  more: ReadonlyArray<string> = []
): Promise<Tinyproxy> => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-tinyproxy-"))
  const port = await freePort()
  const logFile = Path.join(dir, "tinyproxy.log")
  const config = Path.join(dir, "tinyproxy.conf")
  Fs.writeFileSync(
    config,
    [
      `Port ${port}`,
      "Listen 127.0.0.1",
      "Timeout 30",
      `LogFile "${logFile}"`,
      "LogLevel Connect",
      "MaxClients 200",
      `BasicAuth ${credentials.user} ${credentials.password}`,
      "Allow 127.0.0.1",
      "DisableViaHeader Yes",
      ...more
    ].join("\n"),
    { mode: 0o600 }
  )
  const child: ChildProcess = spawn("tinyproxy", ["-d", "-c", config], { stdio: ["ignore", "ignore", "pipe"] })
  let stderr = ""
  child.stderr!.on("data", (chunk) => (stderr += String(chunk)))
  try {
    await listening(port)
  } catch (error) {
    child.kill("SIGKILL")
    throw new Error(`tinyproxy did not start: ${stderr}`, { cause: error })
  }
  const log = () => (Fs.existsSync(logFile) ? Fs.readFileSync(logFile, "utf8") : "")
  const origin = `http://127.0.0.1:${port}`
  return {
    port,
    origin,
    url: `http://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}`,
    ...credentials,
    log,
    tunnels: () => Array.from(log().matchAll(/Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g), (m) => m[1]!),
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve))
        child.kill("SIGTERM")
        await exited
      }
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}
