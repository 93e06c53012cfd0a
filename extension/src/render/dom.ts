/**
 * Building DOM without HTML: every string from an output goes in through textContent, and
 * attributes are set only under names chosen here, never names that come from data.
 */

export interface IProps {
  className?: string;
  text?: string;
  title?: string;
  data?: Record<string, string>;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: IProps = {},
  children: Node[] = []
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.className) {
    node.className = props.className;
  }
  if (props.text !== undefined) {
    node.textContent = props.text;
  }
  if (props.title !== undefined) {
    node.title = props.title;
  }
  for (const [key, value] of Object.entries(props.data ?? {})) {
    node.dataset[key] = value;
  }
  for (const child of children) {
    node.appendChild(child);
  }
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element; ``attrs`` are geometry and classes computed by the renderer. */
export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number> = {},
  text?: string
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    node.setAttribute(key, String(value));
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}
