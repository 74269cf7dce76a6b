// ESLint for every JS file of the repository (scripts/test.sh runs it from the root:
// `node_modules/.bin/eslint -c js_bindings/eslint.config.js .`, eslint from the repository's tools
// manifest, package.json at the root). Correctness rules
// only; layout is left to the authors.
import js from '@eslint/js';
import globals from 'globals';

export default [
  { ignores: ['**/node_modules/', 'build/', 'build-*/', 'js_bindings/dist/', 'var/'] },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.browser, ...globals.worker, ...globals.node },
    },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
];
