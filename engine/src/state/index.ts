/** Operations state: drizzle schema, committed migrations, one Store over SQLite or PostgreSQL. */
export * from './open-store.js';
export * from './store.js';
