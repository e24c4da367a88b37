/**
 * How the command line creates the files it writes (a batch's results, its checkpoint, the copy a
 * resume makes), so that a link someone planted in a shared directory is never followed: every
 * file is created new (`O_CREAT | O_EXCL`, which refuses any existing name, a link included, and
 * `O_NOFOLLOW`), readable by the owner alone; a file that is replaced is written under a random
 * name beside it and renamed over it (a rename replaces a link, never writes through one).
 */
import { randomBytes } from "node:crypto"
import { constants } from "node:fs"
import { type FileHandle, lstat, open, rename, stat, unlink } from "node:fs/promises"
import * as Path from "node:path"

/** Readable and writable by the owner alone. */
export const OWNER_ONLY = 0o600

const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW

/** Creates `path` for writing, owner-only; fails (`EEXIST`) when anything is there, a link included. */
export const createNew = async (path: string): Promise<FileHandle> => {
  const handle = await open(path, CREATE_NEW, OWNER_ONLY)
  // The process's umask may have taken bits away, never added: set exactly owner-only.
  await handle.chmod(OWNER_ONLY)
  return handle
}

/**
 * Opens an existing regular file to read; fails when it is a link (`ELOOP`) or anything but a
 * regular file (a FIFO planted there would block the open, and every read, for good).
 */
export const openToRead = async (path: string): Promise<FileHandle> => {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  if (!(await handle.stat()).isFile()) {
    await handle.close()
    throw Object.assign(new Error(`${path} is not a regular file`), { code: "ENOTREG" })
  }
  return handle
}

/** What stands at `path`, without following a link: nothing, a link, a regular file, or something else (a FIFO, a directory). */
export const kindAt = (path: string): Promise<"none" | "link" | "file" | "other"> =>
  lstat(path).then(
    (found) => (found.isSymbolicLink() ? "link" : found.isFile() ? "file" : "other"),
    (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return "none"
      throw error
    }
  )

/** A new file beside `target` with a random name, owner-only, and that name. */
export const createBeside = async (target: string): Promise<{ readonly path: string; readonly handle: FileHandle }> => {
  const path = Path.join(Path.dirname(target), `.${Path.basename(target)}.${randomBytes(8).toString("hex")}.tmp`)
  return { path, handle: await createNew(path) }
}

/** Puts the file at `from` in the place of `target` (whatever was there, a link included, is replaced, not followed). */
export const replace = (from: string, target: string): Promise<void> =>
  rename(from, target).catch(async (error: unknown) => {
    await unlink(from).catch(() => undefined)
    throw error
  })

/** Replaces `target` with a new owner-only file holding `text`. */
export const writeReplacing = async (target: string, text: string): Promise<void> => {
  const { handle, path } = await createBeside(target)
  try {
    await handle.writeFile(text)
  } catch (error) {
    await handle.close()
    await unlink(path).catch(() => undefined)
    throw error
  }
  await handle.close()
  await replace(path, target)
}

/**
 * Whether users other than the owner may create files in the directory of `path`: write
 * permission for others, or for a group that is not the user's own (where each user has a group
 * of their own, a directory writable by it is theirs alone). They could plant names there, or,
 * without the sticky bit, rename ours.
 */
export const othersMayWriteBeside = (path: string): Promise<boolean> =>
  stat(Path.dirname(Path.resolve(path))).then(
    (found) => (found.mode & 0o002) !== 0 || ((found.mode & 0o020) !== 0 && found.gid !== process.getgid?.()),
    () => false
  )
