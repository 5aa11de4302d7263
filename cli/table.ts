// Human output: left-aligned columns, numbers right-aligned, a header row.

export function table<T>(rows: T[], columns: Array<[string, (row: T) => unknown]>): string {
  if (rows.length === 0) return "(none)";
  const cells = rows.map((r) => columns.map(([, f]) => cell(f(r))));
  const numeric = columns.map((_, i) => cells.every((row) => /^-?[\d.]+$/.test(row[i])));
  const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) =>
    values.map((v, i) => numeric[i] ? v.padStart(widths[i]) : v.padEnd(widths[i])).join("  ")
      .trimEnd();
  return [line(columns.map(([h]) => h)), ...cells.map(line)].join("\n");
}

function cell(v: unknown): string {
  if (v === undefined || v === null) return "-";
  if (typeof v === "boolean") return v ? "yes" : "no";
  return String(v);
}
