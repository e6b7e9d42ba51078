// One tiny helper for building elements: el('button', {type: 'button', onclick}, 'text', child…).
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on') && typeof v === 'function') node[k] = v;
    else if (v === true) node.setAttribute(k, '');
    else if (v !== false && v !== undefined && v !== null) node.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== undefined && c !== null) node.append(c);
  return node;
}
