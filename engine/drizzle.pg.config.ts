// drizzle-kit configuration for the PostgreSQL store: `npx drizzle-kit generate --config drizzle.pg.config.ts`
// (run in engine/) regenerates src/state/migrations/pg from src/state/schema-pg.ts.
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/state/schema-pg.ts',
  out: './src/state/migrations/pg',
});
