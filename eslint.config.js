import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // The request path: V8 (Node 20) misses its inline cache on every property an object literal
    // defines after a spread of a non-empty object, some 0.7 µs each (docs/performance.md, fifth
    // round). Start-up, the CLI, the OpenAPI document, the local renderer and asynchronous tasks
    // are left out: each runs rarely or does far costlier work per call.
    files: ['src/**/*.ts'],
    ignores: [
      'src/bootstrap/**',
      'src/cli/**',
      'src/config/**',
      'src/openapi/**',
      'src/engine/**',
      'src/tasks/**',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement ~ Property',
          message:
            'A property after a spread costs an inline-cache miss per call on Node 20: write the properties out, set them after, or use Object.assign.',
        },
      ],
    },
  },
  {
    // The console runs in the browser; TypeScript checks its names against the DOM library.
    files: ['console/**/*.{ts,tsx}'],
    rules: { 'no-undef': 'off' },
  },
  {
    // Type-aware rules: a promise nobody awaits or handles is a lost error or an unbounded task.
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's suite and test functions return promises the runner itself awaits.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
);
