/**
 * DOM helpers of the panel's drawn sections (the session's graphs, the lineage tree): elements built with attributes
 * and textContent only, since every name and text in them comes from a session.
 */
const SVG = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) e.setAttribute(name, String(value));
  return e;
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The arrowhead the edges of a drawing end in: a `<defs>` holding marker `id`. */
export function arrowDefs(id: string): SVGDefsElement {
  const defs = svg('defs', {});
  const marker = svg('marker', { id, viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.append(svg('path', { d: 'M0,0 L8,4 L0,8 z', class: 'arrow' }));
  defs.append(marker);
  return defs;
}

/** Makes `target` a button for the mouse and the keyboard (Enter, Space). */
export function onActivate(target: Element, activate: () => void): void {
  target.addEventListener('click', activate);
  target.addEventListener('keydown', (e) => {
    const key = (e as KeyboardEvent).key;
    if (key === 'Enter' || key === ' ') {
      e.preventDefault();
      activate();
    }
  });
}
