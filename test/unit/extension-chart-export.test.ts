// The host's side of "Export PNG / SVG": it writes only a real PNG or an SVG document, whatever the webview sends.
import { describe, expect, it } from 'vitest';
import { chartFileName, chartImageBytes } from '../../src/extension/chart-export';

// The smallest valid PNG: one transparent pixel.
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

describe('chart image export', () => {
  it('decodes a PNG data URL to the PNG bytes', () => {
    const bytes = chartImageBytes('png', `data:image/png;base64,${PIXEL}`);
    expect(Buffer.from(bytes).equals(Buffer.from(PIXEL, 'base64'))).toBe(true);
  });

  it('refuses anything that is not a PNG data URL', () => {
    expect(() => chartImageBytes('png', `data:image/jpeg;base64,${PIXEL}`)).toThrow(/not a PNG data URL/);
    expect(() => chartImageBytes('png', `data:image/png;base64,${Buffer.from('GIF89a....').toString('base64')}`)).toThrow(/not a PNG/);
    expect(() => chartImageBytes('png', 'data:image/png;base64,<script>')).toThrow(/not a PNG/);
  });

  it('writes an SVG document with an XML declaration, and refuses other text', () => {
    expect(Buffer.from(chartImageBytes('svg', '<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>')).toString('utf8')).toBe(
      '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>\n',
    );
    expect(Buffer.from(chartImageBytes('svg', '<?xml version="1.0"?><svg></svg>')).toString('utf8')).toBe('<?xml version="1.0"?><svg></svg>\n');
    expect(() => chartImageBytes('svg', '<html><svg></svg></html>')).toThrow(/not an SVG document/);
    expect(() => chartImageBytes('svg', '<svg>')).toThrow(/not an SVG document/);
  });

  it('names the file after the kernel, safely', () => {
    expect(chartFileName('saxpy', 'png')).toBe('saxpy-performance.png');
    expect(chartFileName('../../etc/passwd', 'svg')).toBe('etc_passwd-performance.svg');
    expect(chartFileName('', 'svg')).toBe('kernel-performance.svg');
  });
});
