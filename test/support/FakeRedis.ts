/**
 * Servers on loopback that speak to a Redis client as no well-behaved Redis does: one takes the
 * connection and never answers (a Redis that hangs, or a firewall that swallows), one answers every
 * command with an error that repeats the command's arguments (a proxy in front of Redis that
 * echoes what it refuses, AUTH's password included), one answers PING and then nothing.
 */
import * as Net from "node:net"

export interface FakeRedis {
  readonly port: number
  readonly close: () => Promise<void>
}

const serve = (onSocket: (socket: Net.Socket) => void): Promise<FakeRedis> =>
  new Promise((resolve) => {
    const sockets = new Set<Net.Socket>()
    const server = Net.createServer((socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      socket.on("error", () => {})
      onSocket(socket)
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as Net.AddressInfo).port,
        close: () =>
          new Promise((closed) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => closed())
          })
      }))
  })

/** Takes every connection, reads what comes, and never answers. */
export const silent = (): Promise<FakeRedis> => serve(() => {})

/** The bulk strings of each RESP command in `text` (enough for what ioredis sends). */
const commandsIn = (text: string): Array<Array<string>> =>
  text.split(/\r\n(?=\*)/).map((command) =>
    command.split("\r\n").filter((_, i) => i > 0 && i % 2 === 0).filter((part) => part.length > 0)
  )

/** Answers every command with `-ERR` and the command's own words. */
export const echoing = (): Promise<FakeRedis> =>
  serve((socket) =>
    socket.on("data", (data) => {
      for (const words of commandsIn(data.toString("utf8"))) {
        if (words.length > 0) socket.write(`-ERR refused ${words.join(" ").replace(/[\r\n]/g, " ")}\r\n`)
      }
    })
  )

/** What a Redis that is ready says to INFO (ioredis's ready check and BullMQ's version check read it). */
const INFO = "# Server\r\nredis_version:7.2.0\r\nloading:0\r\n"

/**
 * Answers PING, INFO and the connection's own set-up (CLIENT, SELECT) as Redis does, and nothing
 * else: a Redis that stops answering once a command has started (it hangs, or a proxy swallows).
 */
export const answeringPingOnly = (): Promise<FakeRedis> =>
  serve((socket) =>
    socket.on("data", (data) => {
      for (const words of commandsIn(data.toString("utf8"))) {
        const command = words[0]?.toUpperCase()
        if (command === "PING") socket.write("+PONG\r\n")
        else if (command === "INFO") socket.write(`$${Buffer.byteLength(INFO)}\r\n${INFO}\r\n`)
        else if (command === "CLIENT" || command === "SELECT") socket.write("+OK\r\n")
      }
    })
  )
