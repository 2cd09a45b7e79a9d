/**
 * The bytes of a chart image the panel asked to save (protocol.ts `exportChart`). The webview is untrusted: the host
 * writes only a real PNG or an SVG document, never whatever text it was sent. No vscode import (unit-tested).
 */
import type { ChartImageFormat } from './protocol';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function chartImageBytes(format: ChartImageFormat, data: string): Uint8Array {
  if (format === 'png') {
    const match = /^data:image\/png;base64,([A-Za-z0-9+/]+={0,2})$/.exec(data);
    const bytes = match ? Buffer.from(match[1]!, 'base64') : undefined;
    if (!bytes || !bytes.subarray(0, 8).equals(PNG_SIGNATURE)) throw new Error('the chart image sent by the panel is not a PNG data URL');
    return bytes;
  }
  const svg = data.trim();
  if (!/^(<\?xml[^>]*\?>\s*)?<svg[\s>]/.test(svg) || !svg.endsWith('</svg>')) throw new Error('the chart image sent by the panel is not an SVG document');
  return Buffer.from(svg.startsWith('<?xml') ? `${svg}\n` : `<?xml version="1.0" encoding="UTF-8"?>\n${svg}\n`, 'utf8');
}

/** `saxpy-performance.png`: the kernel's name, kept to characters that are safe in a file name everywhere. */
export function chartFileName(kernelName: string, format: ChartImageFormat): string {
  const base = kernelName.replace(/[^\w.-]+/g, '_').replace(/^[._]+/, '') || 'kernel';
  return `${base}-performance.${format}`;
}
