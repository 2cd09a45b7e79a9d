import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    globalSetup: ['test/setup/build-bundles.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // @langchain/openai warns "New LangChain packages are available ... please upgrade" whenever a model's tool-call
    // arguments are malformed JSON (it files them under invalid_tool_calls, which its own check does not look at); the
    // structured-output tests send such answers on purpose, and the advice does not apply to them.
    onConsoleLog: (log) => !log.startsWith('New LangChain packages are available'),
  },
});
