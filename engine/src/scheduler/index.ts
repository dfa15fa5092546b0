/** The device-independent scheduling core: what the worker wires to the PJRT runtime. */
export * from './clock.js';
export * from './manual-clock.js';
export * from './coalesce.js';
export * from './cost-estimate.js';
export * from './deadline-admission.js';
export * from './deadline-heap.js';
export * from './discipline.js';
export * from './events.js';
export * from './executor.js';
export * from './fair-priority.js';
export * from './model-counters.js';
export * from './model-info.js';
export * from './plan-batch.js';
export * from './recency-ema.js';
export * from './request-queue.js';
export * from './scheduler.js';
