import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/build/**',
      '**/node_modules/**',
      'proto/generated/**',
      '.cache/**',
      'e2e/console/artifacts/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'test', property: 'only' },
        { object: 'describe', property: 'only' },
        { object: 'it', property: 'only' },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // A promise nobody awaits loses its rejection: on the request path that is an unhandled
    // rejection instead of an error answer. Type-aware, so only over the packages' sources.
    files: ['{common,proto,engine,gateway,client,console}/src/**/*.{ts,tsx}', 'native/lib/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // Method tables mix async unary handlers with void stream handlers in one union type, and
      // a Fastify reply is thenable; both are awaited where they are called.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { properties: false } }],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        performance: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        AbortController: 'readonly',
      },
    },
  },
);
