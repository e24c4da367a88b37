/**
 * A token cache's fresh token, read synchronously: for the call's common path, which runs in
 * callbacks. Each `TokenService` registers its reader here when it is built; the reader is its
 * cache's first rule (a token before its soft window), with no lock, as the Effect path reads it.
 */

/** A synchronous reader of a cache's fresh token at `now`, or `undefined` when a refresh is due. */
export type Reader<T> = (now: number) => T | undefined

const readers = new WeakMap<object, Reader<unknown>>()

/** Registers the reader of the cache `service`. */
export const register = <T>(service: object, reader: Reader<T>): void => {
  readers.set(service, reader)
}

/** The reader of the cache `service`, if it registered one (a cache of the application's own may not). */
export const readerOf = <T>(service: object): Reader<T> | undefined => readers.get(service) as Reader<T> | undefined
