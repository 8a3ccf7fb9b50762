type Child = Node | string | null | undefined | false;

/**
 * An element with attributes the card chooses and children; a string child becomes a text node, never markup: what
 * the card shows comes from a model's run, and must not be able to add elements or scripts to it.
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children) {
    if (child) element.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return element;
}
