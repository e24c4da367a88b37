/**
 * Which transports the call's common path may dispatch to directly: those whose `send` is the one
 * the library built over their `dispatch`. An application that wraps a transport the usual way
 * (`{ ...undici, send: wrapped }`) keeps undici's `dispatch` beside its own `send`; dispatching to
 * it would take every call with a cached token round the application's send (its headers, its
 * logs, its faults). Its calls take the Effect path, through its send. A transport whose `send` is
 * the library's and whose `dispatch` the application wraps (to count requests, say) is dispatched
 * to through that wrapper.
 */

const paired = new WeakSet<object>()

/** Marks `send` as the library's own send over a `dispatch`; returns it. */
export const pair = <S extends object>(send: S): S => {
  paired.add(send)
  return send
}

/** The transport's `dispatch`, when its `send` is the library's own; else `undefined` (send through `send`). */
export const dispatchOf = <D>(transport: { readonly send: object; readonly dispatch?: D | undefined }): D | undefined =>
  paired.has(transport.send) ? transport.dispatch : undefined
