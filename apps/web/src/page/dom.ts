/**
 * A small DOM builder. Text is always set as text nodes, never parsed as
 * HTML, so nothing a person or a model wrote can become markup.
 */

export type Child = Node | string | number | null | undefined | false | readonly Child[];

type Listener = (event: Event) => void;

/** Attributes, properties (`value`, `checked`, `disabled`…) and `on…` listeners of an element. */
export type Props = Record<string, string | number | boolean | Listener | null | undefined>;

const properties = new Set(['value', 'checked', 'disabled', 'selected', 'open', 'required', 'hidden', 'readOnly', 'multiple']);

function append(parent: Node, child: Child): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const item of child as readonly Child[]) append(parent, item);
    return;
  }
  parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
}

function apply(element: Element, props: Props | null | undefined): void {
  if (props === null || props === undefined) return;
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      element.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (properties.has(key)) {
      (element as unknown as Record<string, unknown>)[key] = value;
    } else if (typeof value === 'boolean') {
      if (value) element.setAttribute(key, '');
    } else if (typeof value !== 'function') {
      element.setAttribute(key, String(value));
    }
  }
}

/** An HTML element with attributes and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props?: Props | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  apply(element, props);
  append(element, children);
  return element;
}

/** An SVG element with attributes and children. */
export function svg<K extends keyof SVGElementTagNameMap>(tag: K, props?: Props | null, ...children: Child[]): SVGElementTagNameMap[K] {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  apply(element, props);
  append(element, children);
  return element;
}

/** Replace an element's children. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

let counter = 0;
/** A fresh id for tying a label to its control. */
function uid(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** A label and its control, as one field. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  if (control.id === '') control.id = uid('field');
  const hintElement = hint === undefined ? null : h('small', { class: 'hint', id: `${control.id}-hint` }, hint);
  if (hintElement !== null) control.setAttribute('aria-describedby', hintElement.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintElement);
}

/** A select of options, `[value, label]`. */
export function select(name: string, options: ReadonlyArray<readonly [string, string]>, selected?: string): HTMLSelectElement {
  return h(
    'select',
    { name },
    options.map(([value, label]) => h('option', { value, selected: value === selected }, label)),
  );
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

/** A time as a <time> element, readable and machine-readable. */
export function time(iso: string | null | undefined, fallback = '—'): Child {
  if (iso === null || iso === undefined) return fallback;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return h('time', { datetime: date.toISOString() }, dateTime.format(date));
}

/** A day, as the chart's axis shows it. */
export function day(iso: string): string {
  const date = new Date(iso.length === 10 ? `${iso}T12:00:00` : iso);
  return Number.isNaN(date.getTime()) ? iso : dateOnly.format(date);
}
