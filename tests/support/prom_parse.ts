// A strict parser of the Prometheus text exposition format 0.0.4 (no well-kept parser is
// installed): every sample must belong to a family declared by # HELP and # TYPE before
// it, names and labels must be well formed, values numbers, histogram buckets cumulative
// and ending at +Inf with _count equal to it. Throws on the first violation.

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromFamily {
  name: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  help: string;
  samples: PromSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function parseValue(text: string, line: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
    throw new Error(`bad value ${JSON.stringify(text)} in: ${line}`);
  }
  return Number(text);
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf("=", i);
    const key = text.slice(i, eq);
    if (eq < 0 || !LABEL.test(key)) throw new Error(`bad label name in: ${line}`);
    if (key in labels) throw new Error(`duplicate label ${key} in: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value in: ${line}`);
    let j = eq + 2, value = "";
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        const next = text[++j];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new Error(`bad escape in: ${line}`);
      } else value += text[j];
    }
    if (j >= text.length) throw new Error(`unterminated label value in: ${line}`);
    labels[key] = value;
    i = j + 1;
    if (text[i] === ",") i++;
    else if (i < text.length) throw new Error(`expected , between labels in: ${line}`);
  }
  return labels;
}

/** The family a sample name belongs to, given the family's type. */
function belongs(sample: string, family: PromFamily): boolean {
  if (sample === family.name) return family.type !== "histogram";
  const suffix = sample.slice(family.name.length);
  if (!sample.startsWith(family.name)) return false;
  if (family.type === "histogram") return ["_bucket", "_sum", "_count"].includes(suffix);
  if (family.type === "summary") return ["_sum", "_count"].includes(suffix);
  return false;
}

export function parseExposition(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  let current: PromFamily | undefined;
  let pendingHelp: { name: string; help: string } | undefined;
  if (!text.endsWith("\n")) throw new Error("exposition must end with a newline");
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("# HELP ")) {
      const [, name, ...rest] = line.slice(2).split(" ");
      if (!NAME.test(name)) throw new Error(`bad family name in: ${line}`);
      if (families.has(name)) throw new Error(`family ${name} declared twice`);
      pendingHelp = { name, help: rest.join(" ") };
      continue;
    }
    if (line.startsWith("# TYPE ")) {
      const [, name, type] = line.slice(2).split(" ");
      if (pendingHelp?.name !== name) throw new Error(`# TYPE ${name} without # HELP before it`);
      if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(type)) {
        throw new Error(`bad type in: ${line}`);
      }
      current = { name, type: type as PromFamily["type"], help: pendingHelp.help, samples: [] };
      families.set(name, current);
      pendingHelp = undefined;
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = /^([^{\s]+)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const [, name, labelText, valueText] = m;
    if (!NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
    if (!current || !belongs(name, current)) {
      throw new Error(`sample ${name} outside its declared family (after ${current?.name})`);
    }
    const value = parseValue(valueText, line);
    if (current.type === "counter" && !(value >= 0)) throw new Error(`negative counter: ${line}`);
    current.samples.push({ name, labels: parseLabels(labelText ?? "", line), value });
  }
  for (const f of families.values()) if (f.type === "histogram") checkHistogram(f);
  return families;
}

function checkHistogram(f: PromFamily): void {
  const series = new Map<string, PromSample[]>();
  for (const s of f.samples) {
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    series.set(key, [...series.get(key) ?? [], s]);
  }
  for (const [key, samples] of series) {
    const buckets = samples.filter((s) => s.name === `${f.name}_bucket`);
    const count = samples.find((s) => s.name === `${f.name}_count`);
    if (buckets.length === 0 || buckets.at(-1)!.labels.le !== "+Inf") {
      throw new Error(`${f.name}${key}: buckets must end at le="+Inf"`);
    }
    for (let i = 1; i < buckets.length; i++) {
      if (buckets[i].value < buckets[i - 1].value) {
        throw new Error(`${f.name}: buckets not cumulative`);
      }
    }
    if (!count || count.value !== buckets.at(-1)!.value) {
      throw new Error(`${f.name}${key}: _count must equal the +Inf bucket`);
    }
  }
}

/** The value of one sample, found by name and a subset of its labels. */
export function sampleValue(
  families: Map<string, PromFamily>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name !== name) continue;
      if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return undefined;
}
