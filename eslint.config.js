// Lint for the whole repository: the rules the codebase already keeps, checked.
// Formatting is not linted here (no style rules): only defects and limits.
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const sourceFiles = ['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts', 'tests/**/*.ts'];

export default defineConfig(
  {
    ignores: ['**/node_modules/**', '**/dist/**', 'tests/artifacts/**', '.turbo/**', '.roster/**'],
  },
  {
    files: sourceFiles,
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {
        // Each file is checked against its own package's tsconfig.json.
        project: ['tsconfig.eslint.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // A promise nobody awaits loses its error; fire-and-forget is written `void`, with a reason.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrors: 'none',
          ignoreRestSiblings: true,
        },
      ],
      // Real lines, as `wc -l` counts them: blank lines and comments count.
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
    },
  },
  {
    // The web page is built by Vite against its own tsconfig (DOM, bundler resolution).
    files: ['apps/web/src/page/**/*.ts'],
    languageOptions: {
      parserOptions: {
        projectService: false,
        project: ['apps/web/tsconfig.page.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    // Products log through pino; the CLI speaks through its own writer (below).
    files: ['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'],
    rules: {
      'no-console': 'error',
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.object.name='process'][object.property.name=/^std(out|err)$/][property.name='write']",
          message: 'Log through pino; only the CLI writer prints to the terminal.',
        },
      ],
    },
  },
  {
    // The CLI's output is the product: its writer (out/err) and its signal notices print to the terminal, and on a
    // terminal its log lines go out in their short form (log-format.ts, pino's destination there).
    files: ['apps/cli/src/main.ts', 'apps/cli/src/log-format.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
