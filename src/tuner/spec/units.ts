// Quantities in words, for messages and tables (kept apart from the schemas so that `devices` does not load zod).
/** 512 B, 1.5 KiB, 80.0 GiB: binary units, one decimal below 100. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(v >= 100 ? 0 : 1)} ${units[u]}`;
}
