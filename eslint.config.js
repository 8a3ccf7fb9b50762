// The linter's rules: typescript-eslint's and eslint-plugin-vue's recommended sets, a few rules the team
// agreed on, and nothing about layout (Prettier owns that; eslint-config-prettier turns off what clashes).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import vue from 'eslint-plugin-vue';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'out/', 'dist/', 'generated/', 'test-results/', 'playwright-report/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...vue.configs['flat/recommended'],
  {
    files: ['**/*.vue'],
    languageOptions: { parserOptions: { parser: tseslint.parser } },
  },
  {
    languageOptions: { globals: { ...globals.node }, ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      'object-shorthand': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // One helper gives an error's message: contracts/errors.ts errorMessage().
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "ConditionalExpression[test.operator='instanceof'][test.right.name='Error'][alternate.callee.name='String']",
          message: 'Use errorMessage() from src-server/contracts/errors.ts.',
        },
      ],
    },
  },
  {
    // The metrics library stays in metrics/: the run's path tells an observer that main.ts hands it.
    files: ['src-server/**'],
    ignores: ['src-server/metrics/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'prom-client', message: 'Only src-server/metrics/ imports prom-client.' }] },
      ],
    },
  },
  {
    files: ['src-renderer/**'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    // Tests, benchmarks and scripts talk to people on the terminal.
    files: ['test/**', 'build/**', '**/*.test.ts'],
    rules: { 'no-console': 'off' },
  },
  prettier,
  {
    // Prettier wraps code but not comments or strings; comments and code stay within the same width.
    rules: {
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
    },
  },
);
