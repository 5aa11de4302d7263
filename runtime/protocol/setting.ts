// One row of the settings table: a setting's name, where it is read from (config file,
// environment, flag), unit, default, documentation, RocketMQ name and allowed values.
// Pure, so the functions (which import only runtime/protocol/) read their limits from the
// same rows as the broker; runtime/config/ assembles the broker's table from these rows.

/** Bad configuration: names the setting, the value given and what is allowed. */
export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(message: string, readonly setting?: string, readonly value?: unknown) {
    super(message);
  }
}

export type Unit = "ms" | "bytes" | "hours" | "percent" | "count" | "";

export interface Setting<N extends string = string, T = unknown> {
  /** The config-file key: a BrokerConfig field, or store.<StoreConfig field>. */
  readonly name: N;
  readonly env: string;
  readonly flag: string;
  readonly unit: Unit;
  readonly default: T;
  /** The default as documented (it may derive from other settings). */
  readonly defaultText: string;
  /** What values are accepted, in words ("an integer >= 1", "ASYNC or SYNC"). */
  readonly allowedText: string;
  readonly doc: string;
  /** RocketMQ's name for the same setting, where it has one. */
  readonly rocketmq?: string;
  /** Environment or flag text to a value; throws ConfigError. */
  fromText(text: string): T;
  /** Checks a value from any source (the config file included); throws ConfigError. */
  check(value: unknown): T;
}

interface Common<T> {
  default: T;
  doc: string;
  unit?: Unit;
  rocketmq?: string;
  defaultText?: string;
  /** Why the allowed range is what it is, shown in the error. */
  why?: string;
}

/** `--kebab-case` of the field name; store.* settings drop the prefix. */
export function flagOf(name: string): string {
  return "--" + name.replace(/^store\./, "").replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
}

function row<N extends string, T>(
  name: N,
  env: string,
  o: Common<T>,
  allowedText: string,
  fromText: (text: string, fail: () => never) => unknown,
  valid: (value: unknown) => boolean,
): Setting<N, T> {
  const flag = flagOf(name);
  const fail = (value: unknown): never => {
    const why = o.why ? ` (${o.why})` : "";
    throw new ConfigError(
      `${name} must be ${allowedText}${why}, got ${JSON.stringify(value)} [${env}, ${flag}]`,
      name,
      value,
    );
  };
  const check = (value: unknown): T => {
    if (!valid(value)) fail(value);
    return value as T;
  };
  return {
    name,
    env,
    flag,
    unit: o.unit ?? "",
    default: o.default,
    defaultText: o.defaultText ?? String(o.default),
    allowedText,
    doc: o.doc,
    rocketmq: o.rocketmq,
    fromText: (text) => check(fromText(text, () => fail(text))),
    check,
  };
}

export function intSetting<N extends string>(
  name: N,
  env: string,
  o: Common<number> & { min?: number; max?: number },
): Setting<N, number> {
  const min = o.min ?? 0;
  const allowed = o.max === undefined
    ? `an integer >= ${min}`
    : `an integer from ${min} to ${o.max}`;
  return row(
    name,
    env,
    o,
    allowed,
    (text, fail) => /^-?\d+$/.test(text) ? Number(text) : fail(),
    (v) =>
      typeof v === "number" && Number.isSafeInteger(v) && v >= min &&
      (o.max === undefined || v <= o.max),
  );
}

export function textSetting<N extends string>(
  name: N,
  env: string,
  o: Common<string>,
): Setting<N, string> {
  return row(name, env, o, "text", (text) => text, (v) => typeof v === "string");
}

export function choiceSetting<N extends string, const C extends readonly string[]>(
  name: N,
  env: string,
  choices: C,
  o: Common<C[number]>,
): Setting<N, C[number]> {
  const allowed = choices.length < 3
    ? choices.join(" or ")
    : `${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}`;
  return row(name, env, o, allowed, (text) => text, (v) => choices.includes(v as string));
}

export function boolSetting<N extends string>(
  name: N,
  env: string,
  o: Common<boolean>,
): Setting<N, boolean>;
/** Unset (undefined) by default: the code derives the value from other settings. */
export function boolSetting<N extends string>(
  name: N,
  env: string,
  o: Common<undefined>,
): Setting<N, boolean | undefined>;
export function boolSetting<N extends string>(
  name: N,
  env: string,
  o: Common<boolean | undefined>,
): Setting<N, boolean | undefined> {
  return row(
    name,
    env,
    o,
    "true or false",
    (text, fail) => /^(true|1)$/.test(text) ? true : /^(false|0)$/.test(text) ? false : fail(),
    (v) => typeof v === "boolean",
  );
}

/** Comma-separated in the environment and flags, a list of strings in the config file. */
export function listSetting<N extends string>(
  name: N,
  env: string,
  o: Common<string[]> & { allowedText: string; item?: (x: string) => boolean },
): Setting<N, string[]> {
  return row(
    name,
    env,
    o,
    o.allowedText,
    (text) => text.split(",").map((x) => x.trim()).filter((x) => x !== ""),
    (v) =>
      Array.isArray(v) &&
      v.every((x) => typeof x === "string" && (o.item === undefined || o.item(x))),
  );
}

/** JSON in the environment and flags; `valid` checks the parsed value (it may throw a
 * ConfigError of its own with a more precise message). */
export function jsonSetting<N extends string, T>(
  name: N,
  env: string,
  o: Common<T> & { allowedText: string; valid: (value: unknown) => boolean },
): Setting<N, T> {
  return row(name, env, o, o.allowedText, (text, fail) => {
    try {
      return JSON.parse(text);
    } catch {
      return fail();
    }
  }, o.valid);
}

/** The value of `row` in `env`, or its default when unset or empty. */
export function fromEnv<T>(row: Setting<string, T>, env: Record<string, string | undefined>): T {
  const text = env[row.env];
  return text === undefined || text === "" ? row.default : row.fromText(text);
}
