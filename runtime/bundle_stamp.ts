// When the esbuild bundle under dist/ (scripts/bundle.ts) may run in place of the sources.
// The bundle writes dist/stamp.json: every source file esbuild read (ours and the bundled
// packages'), with its size and modification time. A bundle is fresh while every one of
// those files still has that size and time, as make decides; anything else (a file edited,
// touched, checked out, removed, no stamp, a stamp of another format) makes it stale, and a
// stale bundle never runs: the start files (runtime/start.ts, functions/start.ts) then run
// the sources. A changed import list shows as a changed importer, so the recorded set is
// enough. Checking costs one stat per input (~500), a few ms (bench/README.md "Round 5").

/** The two file calls the check needs: Deno's own on Deno (a static `node:fs` import ahead
 * of the bundle cost 2.6 MiB of idle RSS there), node:fs elsewhere. */
interface StampFiles {
  readText(path: string): string;
  /** [size, whole ms of mtime], or undefined when there is no such file. */
  stat(path: string): [number, number] | undefined;
}

export async function stampFiles(): Promise<StampFiles> {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  if (deno) {
    return {
      readText: (path) => deno.readTextFileSync(path),
      stat: (path) => {
        try {
          const s = deno.statSync(path);
          return [s.size, Math.trunc(s.mtime.getTime())];
        } catch {
          return undefined;
        }
      },
    };
  }
  const fs = await import("node:fs");
  return {
    readText: (path) => fs.readFileSync(path, "utf8"),
    stat: (path) => {
      const s = fs.statSync(path, { throwIfNoEntry: false });
      return s ? [s.size, Math.trunc(s.mtimeMs)] : undefined;
    },
  };
}

export const STAMP_FILE = "stamp.json";
const FORMAT = 2;
/** node:fs's `mtimeMs` is a double, whose step near 1.8e12 ms is 0.00024 ms: an mtime of
 * …482.99992 ms reads 483 on Bun where Deno truncates to 482 (a fresh checkout met it: a
 * bundle stamped on Deno read as stale on Bun). An edit, a checkout or a touch moves an
 * mtime by far more, or changes the size. */
const MTIME_SLACK_MS = 1;

export interface BundleStamp {
  format: number;
  /** Entry file (repository-relative) → its bundle, relative to the bundle's folder. */
  outputs: Record<string, string>;
  /** Repository-relative path → [size in bytes, whole ms of its mtime] (runtimes differ in
   * the fraction they report). */
  inputs: Record<string, [number, number]>;
  /** Entry → the inputs of every chunk it may load: the ones checked for it. */
  entryInputs: Record<string, string[]>;
}

/** The stamp of `inputs` (repository-relative paths) as they are now under `root`. */
export function stampOf(
  files: StampFiles,
  root: string,
  inputs: string[],
  outputs: Record<string, string>,
  entryInputs: Record<string, string[]> = Object.fromEntries(
    Object.keys(outputs).map((e) => [e, inputs]),
  ),
): BundleStamp {
  const stamped: Record<string, [number, number]> = {};
  for (const path of inputs) {
    const s = files.stat(`${root}/${path}`);
    if (!s) throw new Error(`${path}: no such file`);
    stamped[path] = s;
  }
  return { format: FORMAT, outputs, inputs: stamped, entryInputs };
}

/** The bundle of `entry` under `root/outdir` when it may run (its path relative to `root`),
 * else why not. */
export function checkBundle(
  files: StampFiles,
  root: string,
  outdir: string,
  entry: string,
): { bundle: string } | { stale: string } {
  let stamp: BundleStamp;
  try {
    stamp = JSON.parse(files.readText(`${root}/${outdir}/${STAMP_FILE}`));
  } catch {
    return { stale: `no ${outdir}/${STAMP_FILE}` };
  }
  const out = stamp.outputs?.[entry];
  const checked = stamp.entryInputs?.[entry];
  if (stamp.format !== FORMAT || !stamp.inputs || !out || !checked) {
    return { stale: `${outdir}/${STAMP_FILE} does not describe ${entry}` };
  }
  const bundle = `${outdir}/${out}`;
  if (!files.stat(`${root}/${bundle}`)) return { stale: `${bundle} is missing` };
  for (const path of checked) {
    const [size, mtimeMs] = stamp.inputs[path] ?? [-1, -1];
    const s = files.stat(`${root}/${path}`);
    if (!s) return { stale: `${path} is gone` };
    if (s[0] !== size || Math.abs(s[1] - mtimeMs) > MTIME_SLACK_MS) {
      return { stale: `${path} changed` };
    }
  }
  return { bundle };
}

/**
 * Runs `entry` (repository-relative, e.g. "runtime/main.ts"): its bundle under dist/ when
 * fresh, else the source file itself, with a warning on stderr when a stamp exists but the
 * bundle is stale. The specifiers are computed, so Deno loads neither graph ahead of time.
 */
export async function startEntry(entry: string, outdir = "dist"): Promise<void> {
  const root = new URL("..", import.meta.url);
  const checked = checkBundle(
    await stampFiles(),
    decodeURIComponent(root.pathname).replace(/\/$/, ""),
    outdir,
    entry,
  );
  if ("bundle" in checked) {
    await import(new URL(checked.bundle, root).href);
    return;
  }
  if (!checked.stale.startsWith("no ")) {
    console.error(JSON.stringify({
      t: new Date().toISOString(),
      level: "warn",
      msg: `${outdir}/ is stale, running the sources (rebuild: deno task bundle)`,
      reason: checked.stale,
    }));
  }
  await import(new URL(entry, root).href);
}
