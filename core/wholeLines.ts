/**
 * Appending lines to a file so that it only ever holds whole ones. A write to a full disk can land
 * short (the kernel writes what fits and says so, and Node's `write` reports it as a success): the
 * rest is written, and when it cannot be, the file is cut back to its last whole line and the
 * append fails. The next line then starts where the last whole one ended, never glued to a piece.
 *
 * With `durable`, an append resolves only once its bytes are on disk (`fdatasync`): a queue job is
 * marked done in Redis after its line is written, and a crash of the machine must not lose it.
 * Appends waiting for the disk share one `fdatasync` (a group commit), not one each.
 */
import type { FileHandle } from "node:fs/promises"

/** Appends whole lines to `handle`; `length` is the file's length so far (a new file: 0). */
export const wholeLines = (
  handle: FileHandle,
  { durable = false, length = 0 }: { readonly durable?: boolean; readonly length?: number } = {}
) => {
  let whole = length
  /** Set when the file could not be cut back: nothing more is written to it. */
  let broken: unknown
  let last: Promise<unknown> = Promise.resolve()
  const sync = durable ? groupCommit(handle) : () => Promise.resolve()

  const write = async (bytes: Buffer): Promise<void> => {
    if (broken !== undefined) throw broken
    let written = 0
    try {
      while (written < bytes.length) {
        const { bytesWritten } = await handle.write(bytes, written, bytes.length - written, whole + written)
        // A write that takes nothing would repeat for good: the disk is full.
        if (bytesWritten === 0) throw Object.assign(new Error("no space left on the device"), { code: "ENOSPC" })
        written += bytesWritten
      }
    } catch (error) {
      // The piece that landed is cut off; positioned writes would overwrite it anyway, and a file
      // that cannot be cut is not written again (its end may hold a piece).
      if (written > 0) await handle.truncate(whole).catch((cause: unknown) => (broken = cause))
      throw error
    }
    whole += bytes.length
  }

  return {
    /** Appends `text` (whole lines, each ending with a newline): resolves once it is whole in the file. */
    append: (text: string, encoding: BufferEncoding = "utf8"): Promise<void> => {
      const bytes = Buffer.from(text, encoding)
      // One write at a time: each starts where the last whole line ended.
      const written = last.then(() => write(bytes))
      last = written.catch(() => undefined)
      return written.then(sync)
    },
    /** The length of the file's whole lines. */
    length: (): number => whole
  }
}

/**
 * `fdatasync` for many waiters: one runs at a time; whoever asks while one runs waits for the next,
 * which starts when it ends and serves everyone who asked meanwhile (a sync covers only the writes
 * done before it began).
 */
const groupCommit = (handle: FileHandle) => {
  /** The sync under way, settled quietly (its own waiters hear its failure). */
  let running: Promise<void> | undefined
  let next: Promise<void> | undefined
  const start = (): Promise<void> => {
    const sync = handle.datasync()
    const settled: Promise<void> = sync.then(ignore, ignore).then(() => {
      if (running === settled) running = undefined
    })
    running = settled
    return sync
  }
  return (): Promise<void> => {
    if (next !== undefined) return next
    if (running === undefined) return start()
    next = running.then(() => {
      next = undefined
      return start()
    })
    return next
  }
}

const ignore = (): void => {}
