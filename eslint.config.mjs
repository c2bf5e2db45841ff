// The lint bar: strict type-checked rules, no floating promises, exhaustive switches,
// bounded complexity and parameter counts (use an options object past three).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cluster/**', 'bin/**', 'charts/**'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it return promises the runner itself awaits.
          allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }],
        },
      ],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/explicit-module-boundary-types': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      complexity: ['error', 15],
      'max-params': ['error', 4],
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
      eqeqeq: 'error',
      // @kubernetes/client-node's models (V1Pod, V1PodStatus, …) are generated classes that carry
      // no behaviour; the API is used with plain JSON-shaped literals everywhere (its serializer
      // reads fields, never prototypes). These two rules would force `new V1Pod()` ceremony on
      // every literal and spread, without catching anything real in this codebase.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      '@typescript-eslint/no-misused-spread': 'off',
    },
  },
  {
    // Tests describe behaviour in long sentences and build fixtures inline.
    files: ['**/*.test.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      'max-lines-per-function': 'off',
      'max-lines': ['error', { max: 600, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Assertions read optional fields defensively; a wrong guess fails the assertion anyway.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // Assertions over optional chains count as branches; the bound is for production code.
      complexity: 'off',
    },
  },
  {
    // util/ is the bottom layer: shared by every other folder, it imports none of them.
    files: ['util/**/*.ts'],
    ignores: ['util/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['../**'], message: 'util/ imports nothing from the rest of the project (controllers, reconcilers, cri, cmd, dashboard)' }] }],
    },
  },
  {
    // The shipped code loads no client-node module: its API client is kube/. Loading client-node's
    // index cost the agent ~45 MiB and its request path ~31% of the agent's CPU in a 110-pod batch
    // (docs/benchmarks.md). Its model types are free (erased), so type imports stay; an
    // `import { type X }` would still load the module, hence no-import-type-side-effects.
    files: ['**/*.ts'],
    ignores: ['**/*.test.ts', 'test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [{ name: '@kubernetes/client-node', allowTypeImports: true, message: 'use kube/ (the agent\'s API client); client-node is for types only' }],
          patterns: [{ group: ['@kubernetes/client-node/*'], allowTypeImports: true, message: 'use kube/ (the agent\'s API client); client-node is for types only' }],
        },
      ],
      '@typescript-eslint/no-import-type-side-effects': 'error',
    },
  },
  {
    // kube/ is the API client: it builds on util/ alone.
    files: ['kube/*.ts'],
    ignores: ['kube/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['../*', '!../util'], message: 'kube/ imports only util/ from the rest of the project' }] }],
    },
  },
  {
    // approver/ is the cluster's CSR approver: the API client and the utilities, nothing of the agent.
    files: ['approver/**/*.ts'],
    ignores: ['approver/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['../*', '!../kube', '!../util'], message: 'approver/ imports only kube/ and util/' }] }],
    },
  },
  {
    // queue-users/ (`nodelet redis-users`) provisions Redis users from Nodes: the queue's ACL rules,
    // the API client and the utilities, nothing else of the agent.
    files: ['queue-users/**/*.ts'],
    ignores: ['queue-users/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['../*', '!../kube', '!../util', '!../controllers'], message: 'queue-users/ imports only kube/, util/ and the queue (controllers/queue/)' }, { group: ['../controllers/*', '!../controllers/queue'], message: 'queue-users/ imports only the queue of controllers/' }] }],
    },
  },
  {
    // The same one folder down (kube/certificates/).
    files: ['kube/*/*.ts'],
    ignores: ['kube/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['../../*', '!../../util'], message: 'kube/ imports only util/ from the rest of the project' }] }],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
