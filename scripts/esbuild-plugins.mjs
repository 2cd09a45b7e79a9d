// esbuild plugins shared by the bundles that need them (scripts/build.mjs).
import { readFile } from 'node:fs/promises';

/**
 * svgcanvas parses a CSS font by setting a style attribute, which the panel's CSP refuses (style-src without
 * 'unsafe-inline') and reports as a violation; the CSSOM property does the same and is allowed. The build fails if the
 * line changes upstream, so a new svgcanvas is looked at rather than silently unpatched.
 */
export const svgcanvasCspPatch = {
  name: 'svgcanvas-csp',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]svgcanvas[\\/]dist[\\/]svgcanvas\.js$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      const line = `el.setAttribute("style", 'font:' + this.font);`;
      if (source.split(line).length !== 2) throw new Error(`svgcanvas changed: ${path} no longer has exactly one \`${line}\`; check this patch in scripts/esbuild-plugins.mjs`);
      return { contents: source.replace(line, 'el.style.font = this.font;'), loader: 'js' };
    });
  },
};
