// Broker settings: every limit named, with unit, default and reason, in one table
// (runtime/config/: the rows by area, the loader, the renderer of --help and the docs).
// Only main.ts reads the environment; everything else receives a BrokerConfig.
export { type BrokerConfig, defaultBrokerConfig, SETTING_AREAS, SETTINGS } from "./config/table.ts";
export { loadBrokerConfig } from "./config/load.ts";
export { configurationMarkdown, settingsHelp } from "./config/render.ts";
export { ConfigError } from "./protocol/setting.ts";
export type { ApiKeyConfig } from "./protocol/types.ts";
