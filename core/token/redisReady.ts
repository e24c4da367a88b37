/**
 * A Redis client still making its first connection is waited for, not counted unavailable: with
 * its offline queue off (as docs/scaling.md advises), a command sent before the client is ready
 * fails at once ("Stream isn't writeable and enableOfflineQueue options is false"), so an instance
 * that calls at start-up would find the store down and fetch a token of its own: one token per
 * process instead of one per fleet. Once the client has been ready, a lost connection is an outage,
 * which the store's timeout and `onUnavailable` handle: no waiting then.
 */

/** What is used of a client's events: a listener, and its removal. */
export interface Events {
  readonly on?: ((event: string, listener: (...args: ReadonlyArray<unknown>) => void) => unknown) | undefined
  readonly removeListener?:
    | ((event: string, listener: (...args: ReadonlyArray<unknown>) => void) => unknown)
    | undefined
}

/** Longest wait for a first connection (the token store's own bound is usually shorter). */
export const MAX_READY_WAIT_MILLIS = 10_000

const SETTLED = ["ready", "error", "end"] as const

/**
 * A function that resolves once `client` has made its first connection: at once when it has, is
 * not `connecting()`, or has no events; else on its `ready` event, or its `error` or `end` (the
 * command then fails as it would have), or after {@link MAX_READY_WAIT_MILLIS}. Never rejects,
 * and leaves no listener or timer behind.
 */
export const firstConnection = (client: Events, connecting: () => boolean): () => Promise<void> => {
  let connected = false
  return () => {
    if (connected) return Promise.resolve()
    if (!connecting() || typeof client.on !== "function") {
      connected = !connecting()
      return Promise.resolve()
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        for (const event of SETTLED) client.removeListener?.call(client, event, done)
        connected = !connecting()
        resolve()
      }
      const timer = setTimeout(done, MAX_READY_WAIT_MILLIS)
      for (const event of SETTLED) client.on!.call(client, event, done)
    })
  }
}
