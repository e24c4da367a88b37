/**
 * A small tmpfs for the tests of a full disk: a real file system that runs out of space, where the
 * kernel writes what fits and says ENOSPC, as a full volume of workers' shards does. Mounted with
 * `mount -t tmpfs` (root, as CI runs; else `sudo -n`), unmounted when done.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export interface Tmpfs {
  readonly path: string
  /** Takes all the space left but `keepBytes`, with a file of its own. */
  readonly fill: (keepBytes?: number) => void
  /** Gives the space taken by {@link fill} back. */
  readonly free: () => void
  readonly unmount: () => void
}

const asRoot = (command: string, args: ReadonlyArray<string>): void => {
  const root = process.getuid?.() === 0
  execFileSync(root ? command : "sudo", root ? args : ["-n", command, ...args], { stdio: "pipe" })
}

/** A tmpfs of `kib` KiB on a new directory. */
export const mount = (kib: number): Tmpfs => {
  const path = Fs.mkdtempSync(Path.join(Os.tmpdir(), "tmpfs-"))
  try {
    asRoot("mount", ["-t", "tmpfs", "-o", `size=${kib}k,mode=0700`, "tmpfs", path])
  } catch (error) {
    Fs.rmSync(path, { recursive: true, force: true })
    throw new Error(
      `a tmpfs could not be mounted (the full-disk tests need root or sudo -n, as CI has): ${(error as Error).message}`
    )
  }
  const filler = Path.join(path, ".filler")
  return {
    path,
    fill: (keepBytes = 0) => {
      const { bavail, bsize } = Fs.statfsSync(path)
      const size = Math.max(0, bavail * bsize - keepBytes)
      const fd = Fs.openSync(filler, "w")
      try {
        // Written, not just sized: a sparse file would take no space.
        const block = Buffer.alloc(4096, 120)
        for (let written = 0; written < size;) {
          written += Fs.writeSync(fd, block, 0, Math.min(block.length, size - written))
        }
      } finally {
        Fs.closeSync(fd)
      }
    },
    free: () => Fs.rmSync(filler, { force: true }),
    unmount: () => {
      asRoot("umount", ["-l", path])
      Fs.rmSync(path, { recursive: true, force: true })
    }
  }
}
