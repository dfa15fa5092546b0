// drizzle-kit configuration for the SQLite store: `npx drizzle-kit generate --config drizzle.sqlite.config.ts`
// (run in engine/) regenerates src/state/migrations/sqlite from src/state/schema-sqlite.ts.
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './src/state/schema-sqlite.ts',
  out: './src/state/migrations/sqlite',
});
