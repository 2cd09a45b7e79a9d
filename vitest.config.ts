import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    globalSetup: ['test/setup/build-bundles.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
