/** A Writable that keeps what is written to it, for the CLI's stdout and stderr in tests. */
import { Writable } from 'node:stream';

export function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return Object.assign(stream, { text: () => chunks.join('') });
}
