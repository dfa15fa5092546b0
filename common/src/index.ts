export * from './errors.js';
export * from './cancellation.js';
export * from './timers.js';
export type * from './wire.js';
