// Prometheus text exposition (format 0.0.4): one family at a time, always with # HELP and
// # TYPE, label values escaped. Pure: the broker, split-mode functions and slaves use it.

export type Labels = Record<string, string | number>;
export type Sample = [labels: Labels, value: number];

const escapeLabel = (v: string) =>
  v.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
const escapeHelp = (v: string) => v.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(String(v))}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

function num(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** A counter or gauge family: HELP, TYPE and one line per sample. */
export function family(
  name: string,
  type: "counter" | "gauge",
  help: string,
  samples: Sample[] | number,
): string[] {
  const list: Sample[] = typeof samples === "number" ? [[{}, samples]] : samples;
  return [
    `# HELP ${name} ${escapeHelp(help)}`,
    `# TYPE ${name} ${type}`,
    ...list.map(([labels, v]) => `${name}${labelText(labels)} ${num(v)}`),
  ];
}

/** A summary from raw samples: the given quantiles, _sum and _count. */
export function summary(
  name: string,
  help: string,
  values: readonly number[],
  quantiles: number[] = [0.5, 0.9, 0.99],
): string[] {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
  return [
    `# HELP ${name} ${escapeHelp(help)}`,
    `# TYPE ${name} summary`,
    ...quantiles.map((q) => `${name}{quantile="${q}"} ${num(at(q))}`),
    `${name}_sum ${num(sorted.reduce((s, v) => s + v, 0))}`,
    `${name}_count ${sorted.length}`,
  ];
}

/** A histogram from counts per bound (not cumulative) and their sum, in the family's unit. */
export function histogram(
  name: string,
  help: string,
  bounds: readonly number[],
  counts: readonly number[],
  sum: number,
): string[] {
  const out = [`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} histogram`];
  let cumulative = 0;
  bounds.forEach((b, i) => {
    cumulative += counts[i];
    out.push(`${name}_bucket{le="${num(b)}"} ${cumulative}`);
  });
  cumulative += counts[bounds.length];
  out.push(`${name}_bucket{le="+Inf"} ${cumulative}`, `${name}_sum ${num(sum)}`);
  out.push(`${name}_count ${cumulative}`);
  return out;
}

/** Cumulative bucket counts for a histogram, by label set. */
export class Histogram {
  readonly #series = new Map<string, { labels: Labels; counts: number[]; sum: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
  ) {}

  /** `key` names the label set when the caller has a cheaper one than the labels' text. */
  observe(labels: Labels, value: number, key = labelText(labels)): void {
    let s = this.#series.get(key);
    if (s === undefined) {
      s = { labels, counts: new Array(this.bounds.length + 1).fill(0), sum: 0 };
      this.#series.set(key, s);
    }
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]) i++;
    s.counts[i]++;
    s.sum += value;
  }

  lines(): string[] {
    const out = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} histogram`];
    for (const s of this.#series.values()) {
      let cumulative = 0;
      this.bounds.forEach((b, i) => {
        cumulative += s.counts[i];
        out.push(`${this.name}_bucket${labelText({ ...s.labels, le: num(b) })} ${cumulative}`);
      });
      cumulative += s.counts[this.bounds.length];
      out.push(`${this.name}_bucket${labelText({ ...s.labels, le: "+Inf" })} ${cumulative}`);
      out.push(`${this.name}_sum${labelText(s.labels)} ${num(s.sum)}`);
      out.push(`${this.name}_count${labelText(s.labels)} ${cumulative}`);
    }
    return out;
  }
}
