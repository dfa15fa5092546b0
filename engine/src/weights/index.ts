/** Device weights on demand: residency floors, an LRU byte budget, and its sizing. */
export * from './residency.js';
export * from './weight-backend.js';
export * from './weight-budget.js';
export * from './weight-cache.js';
