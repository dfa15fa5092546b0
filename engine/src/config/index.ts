export * from './types.js';
export * from './defaults.js';
export * from './env-overrides.js';
export * from './node-config.js';
export { parseWorkerSettings, SETTINGS_KEYS } from './worker-settings.js';
export { ConfigContext, MappingReader, parseByteSize, formatInterval, type Interval } from './config-reader.js';
