/** A free TCP port on loopback, for a server a test starts (a Redis, a proxy). */
import * as Net from "node:net"

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Resolves once something accepts connections on `port` (polling every 20 ms), or rejects after `timeoutMillis`. */
export const listening = async (port: number, timeoutMillis = 10_000): Promise<void> => {
  const until = Date.now() + timeoutMillis
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = Net.connect({ port, host: "127.0.0.1" })
      socket.once("connect", () => {
        socket.destroy()
        resolve(true)
      })
      socket.once("error", () => resolve(false))
    })
    if (open) return
    if (Date.now() > until) throw new Error(`nothing listens on port ${port} after ${timeoutMillis} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
