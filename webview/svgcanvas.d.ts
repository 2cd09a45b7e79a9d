/** The part of svgcanvas (a 2D canvas context that writes SVG; the package ships no types) that webview/chart.ts uses. */
declare module 'svgcanvas' {
  export class Context {
    constructor(options: { width: number; height: number; document?: Document });
    width: number;
    height: number;
    /** The SVG document as text; `true` replaces named entities, which a standalone SVG file does not know. */
    getSerializedSvg(fixNamedEntities?: boolean): string;
  }
}
