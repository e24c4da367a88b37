/**
 * The `effect-clinical` executable under attack where it writes (the built bin, a child process):
 * links and FIFOs planted at the batch's files, a directory others may write to, a full disk under the
 * results. Each case is what a user would see: the exit code, stdout and stderr, the files left behind.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Cli from "./support/Cli.js"
import { dir, envOf, mock, PERSONS, setUpCli, workspace } from "./support/cliFixtures.js"
import * as Tmpfs from "./support/Tmpfs.js"

setUpCli("effect-clinical-cli-hostile-")

describe("batch never writes through a link someone planted", { timeout: 60_000 }, () => {
  it("a link at the checkpoint's name is replaced, not followed: the file it points to is untouched", async () => {
    const here = workspace("planted-checkpoint", { "persons.txt": PERSONS, "victim.txt": "the victim's own\n" })
    const out = Path.join(here, "results.ndjson")
    Fs.symlinkSync(Path.join(here, "victim.txt"), `${out}.checkpoint.json`)
    const ran = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
      {
        env: envOf(mock.url)
      }
    )
    expect(ran.code, ran.stderr).toBe(0)
    expect(Fs.readFileSync(Path.join(here, "victim.txt"), "utf8")).toBe("the victim's own\n")
    const checkpoint = Fs.lstatSync(`${out}.checkpoint.json`)
    expect(checkpoint.isSymbolicLink()).toBe(false)
    expect(checkpoint.mode & 0o777).toBe(0o600)
    expect(JSON.parse(Fs.readFileSync(`${out}.checkpoint.json`, "utf8"))).toMatchObject({ operation: "medications" })
  })

  it("a dangling link at --out is refused before anything is sent, and its target is never created", async () => {
    const here = workspace("dangling-out", { "persons.txt": PERSONS })
    const target = Path.join(here, "elsewhere.ndjson")
    const out = Path.join(here, "results.ndjson")
    Fs.symlinkSync(target, out)
    const before = (await mock.counters()).dataRequests
    const ran = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
      {
        env: envOf(mock.url)
      }
    )
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain(`${out} is a symbolic link`)
    expect(Fs.existsSync(target)).toBe(false)
    expect(Fs.existsSync(`${out}.checkpoint.json`)).toBe(false)
    expect((await mock.counters()).dataRequests).toBe(before)
  })

  /** A batch of three persons run to its end in a workspace of its own, beside a file to protect. */
  const finishedBatch = async (name: string) => {
    const here = workspace(name, { "persons.txt": PERSONS, "victim.txt": "the victim's own\n" })
    const out = Path.join(here, "results.ndjson")
    const args = ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out]
    expect((await Cli.run(args, { env: envOf(mock.url) })).code).toBe(0)
    return { args, here, out }
  }

  it("--resume refuses a link at --out or at the checkpoint, and writes nothing through either", async () => {
    const { args, here, out } = await finishedBatch("resume-links")
    const results = Fs.readFileSync(out, "utf8")

    // The results file moved away and a link put in its place.
    Fs.renameSync(out, Path.join(here, "moved.ndjson"))
    Fs.symlinkSync(Path.join(here, "victim.txt"), out)
    const throughOut = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
    expect(throughOut.code).toBe(2)
    expect(throughOut.stderr).toContain(`${out} is a symbolic link`)
    expect(Fs.readFileSync(Path.join(here, "victim.txt"), "utf8")).toBe("the victim's own\n")
    Fs.unlinkSync(out)
    Fs.renameSync(Path.join(here, "moved.ndjson"), out)

    const checkpoint = Fs.readFileSync(`${out}.checkpoint.json`, "utf8")
    Fs.writeFileSync(Path.join(here, "copy.json"), checkpoint)
    Fs.unlinkSync(`${out}.checkpoint.json`)
    Fs.symlinkSync(Path.join(here, "copy.json"), `${out}.checkpoint.json`)
    const throughCheckpoint = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
    expect(throughCheckpoint.code).toBe(2)
    expect(throughCheckpoint.stderr).toContain(`${out}.checkpoint.json is a symbolic link`)
    expect(Fs.readFileSync(out, "utf8")).toBe(results)
  })

  it("a resume writes its copy under a new random name: a link planted at the old fixed name is left alone", async () => {
    const { args, here, out } = await finishedBatch("resume-temp")
    // A crash cut the last line: the resume rewrites the file, keeping the two whole lines.
    const whole = Fs.readFileSync(out, "utf8")
    Fs.writeFileSync(out, whole.slice(0, whole.length - 10))
    Fs.symlinkSync(Path.join(here, "victim.txt"), `${out}.resuming`)
    const resumed = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(Fs.readFileSync(Path.join(here, "victim.txt"), "utf8")).toBe("the victim's own\n")
    const lines = Fs.readFileSync(out, "utf8").trim().split("\n").map((line) => JSON.parse(line))
    expect(lines.map((line) => line.index).sort()).toEqual([0, 1, 2])
    expect(Fs.lstatSync(out).isSymbolicLink()).toBe(false)
    expect(Fs.statSync(out).mode & 0o777).toBe(0o600)
    // Nothing of the resume is left beside it but the results and the checkpoint (and the planted link).
    expect(Fs.readdirSync(here).sort()).toEqual(
      ["persons.txt", "results.ndjson", "results.ndjson.checkpoint.json", "results.ndjson.resuming", "victim.txt"]
    )
  })

  it("a FIFO planted at the checkpoint or at --out is refused at once, never opened (from review)", async () => {
    const { args, here, out } = await finishedBatch("fifo")
    Fs.unlinkSync(`${out}.checkpoint.json`)
    execFileSync("mkfifo", [`${out}.checkpoint.json`])
    const resumed = await Cli.run([...args, "--resume"], { env: envOf(mock.url), timeoutMillis: 20_000 })
    expect(resumed.code).toBe(2)
    expect(resumed.stderr).toContain(`${out}.checkpoint.json is not a regular file`)
    const fresh = Path.join(here, "fifo.ndjson")
    execFileSync("mkfifo", [fresh])
    const started = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", fresh],
      { env: envOf(mock.url), timeoutMillis: 20_000 }
    )
    expect(started.code).toBe(2)
  })

  it("a directory others may write to is named in a warning on stderr", async () => {
    const here = workspace("shared-dir", { "persons.txt": PERSONS })
    Fs.chmodSync(here, 0o1777)
    const out = Path.join(here, "results.ndjson")
    const ran = await Cli.run(
      ["batch", "medications", "--persons-file", Path.join(here, "persons.txt"), "--out", out],
      {
        env: envOf(mock.url)
      }
    )
    expect(ran.code).toBe(0)
    expect(ran.stderr).toContain(`warning: other users may create files in the directory of ${out}`)
    // Writable by the user's own group (each user a group of their own): no one else's.
    const own = workspace("own-dir", { "persons.txt": PERSONS })
    Fs.chmodSync(own, 0o770)
    const quiet = await Cli.run([
      "batch",
      "medications",
      "--persons-file",
      Path.join(own, "persons.txt"),
      "--out",
      Path.join(own, "results.ndjson")
    ], { env: envOf(mock.url) })
    expect(quiet.code).toBe(0)
    expect(quiet.stderr).not.toContain("warning")
  })
})

describe("a full disk under the batch's results", { timeout: 120_000 }, () => {
  it("the batch stops saying so, its file holds whole lines only, and --resume finishes once space returns", async () => {
    const disk = Tmpfs.mount(256)
    try {
      const persons = Path.join(dir, "thirty.txt")
      Fs.writeFileSync(persons, Array.from({ length: 10 }, () => PERSONS).join(""))
      const out = Path.join(disk.path, "results.ndjson")
      // Two pages left: the checkpoint's, and one for the results (about five of their thirty lines).
      disk.fill(8192)
      const args = ["batch", "medications", "--persons-file", persons, "--out", out, "--concurrency", "1"]
      const full = await Cli.run(args, { env: envOf(mock.url) })
      expect(full.code).not.toBe(0)
      expect(full.stderr).toContain("ENOSPC")
      const kept = Fs.readFileSync(out, "utf8")
      expect(kept.length).toBeGreaterThan(0)
      expect(kept.endsWith("\n")).toBe(true)
      for (const line of kept.trimEnd().split("\n")) expect(() => JSON.parse(line)).not.toThrow()
      disk.free()
      const resumed = await Cli.run([...args, "--resume"], { env: envOf(mock.url) })
      expect(resumed.code, resumed.stderr).toBe(0)
      const lines = Fs.readFileSync(out, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line))
      expect(lines.map((line) => line.index).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i))
      expect(lines.every((line) => line.outcome === "Success")).toBe(true)
    } finally {
      disk.unmount()
    }
  })
})
