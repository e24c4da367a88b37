/**
 * A real `redis-server` for the tests (Debian's package: `.ci/run` installs it when absent): on a
 * free loopback port, with no persistence, stopped when the test is done. The tests talk to it over
 * real sockets; there is no Redis mock.
 */
import { Redis } from "ioredis"
import { type ChildProcess, spawn } from "node:child_process"
import * as Net from "node:net"
import { freePort } from "./Ports.js"

export interface RedisServer {
  readonly port: number
  readonly url: string
  /** Ends the server (SIGKILL: no goodbye to its clients) and waits until it is gone. */
  readonly kill: () => Promise<void>
  /** Starts it again on the same port (empty, unless started with `appendOnlyDir`) and waits until it answers. */
  readonly restart: () => Promise<void>
  /** Freezes it (SIGSTOP): connections stay open, nothing is answered. */
  readonly pause: () => void
  /** Thaws it (SIGCONT). */
  readonly resume: () => void
  /** Ends it for good. */
  readonly stop: () => Promise<void>
}

/** Whether a PING on `port` is answered with PONG. */
const pong = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = Net.connect({ port, host: "127.0.0.1" })
    const done = (answer: boolean) => {
      socket.destroy()
      resolve(answer)
    }
    socket.setTimeout(500, () => done(false))
    socket.once("error", () => done(false))
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")))
  })

const launch = async (port: number, appendOnlyDir: string | undefined): Promise<ChildProcess> => {
  const persistence = appendOnlyDir === undefined
    ? ["--appendonly", "no"]
    : ["--appendonly", "yes", "--appendfsync", "always", "--dir", appendOnlyDir]
  const child = spawn("redis-server", [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    ...persistence,
    "--loglevel",
    "warning"
  ], { stdio: ["ignore", "ignore", "pipe"] })
  let stderr = ""
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  const failed = new Promise<never>((_, reject) => {
    child.once("error", (error) =>
      reject(
        new Error(
          `redis-server could not be started (${error.message}); install Debian's redis-server (bash .ci/run does)`
        )
      ))
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${stderr}`)))
  })
  failed.catch(() => {})
  for (let i = 0; i < 100; i++) {
    if (await Promise.race([pong(port), failed])) return child
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  child.kill("SIGKILL")
  throw new Error(`redis-server on port ${port} did not answer within 5 s: ${stderr}`)
}

const ended = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once("exit", () => resolve()))

/**
 * Starts a server on a free loopback port. With `appendOnlyDir`, every write is logged there and
 * synced before it is acknowledged (AOF, `appendfsync always`): a restart loses nothing.
 */
export const start = async (options?: { readonly appendOnlyDir?: string }): Promise<RedisServer> => {
  const port = await freePort()
  const appendOnlyDir = options?.appendOnlyDir
  let child = await launch(port, appendOnlyDir)
  const kill = async () => {
    child.kill("SIGCONT")
    child.kill("SIGKILL")
    await ended(child)
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill,
    restart: async () => {
      await kill()
      child = await launch(port, appendOnlyDir)
    },
    pause: () => child.kill("SIGSTOP"),
    resume: () => child.kill("SIGCONT"),
    stop: kill
  }
}

/** Every key of the server on `port` and every value it holds, as text: strings, hashes, lists, sets, sorted sets, streams. */
export const contents = async (port: number): Promise<string> => {
  const admin = new Redis(port, "127.0.0.1")
  try {
    const parts: Array<string> = []
    for (const key of await admin.keys("*")) {
      const type = await admin.type(key)
      const value = type === "string"
        ? await admin.get(key)
        : type === "hash"
        ? await admin.hgetall(key)
        : type === "list"
        ? await admin.lrange(key, 0, -1)
        : type === "set"
        ? await admin.smembers(key)
        : type === "zset"
        ? await admin.zrange(key, 0, -1, "WITHSCORES")
        : type === "stream"
        ? await admin.xrange(key, "-", "+")
        : `<${type}>`
      parts.push(key, JSON.stringify(value))
    }
    return parts.join("\n")
  } finally {
    admin.disconnect()
  }
}

/** Empties the server on `port`. */
export const flushAll = async (port: number): Promise<void> => {
  const admin = new Redis(port, "127.0.0.1")
  await admin.flushall()
  admin.disconnect()
}
