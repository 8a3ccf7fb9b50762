import DOMPurify from 'dompurify';
import { type LinkReferences, markdownParser } from './markdown-parser';

/** Link targets a person may follow from model output: web pages and mail, nothing that runs or reads files. */
const SAFE_LINK = /^(https?:|mailto:)/i;

let hooked = false;
function installHooks(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      const href = node.getAttribute('href') ?? '';
      if (!SAFE_LINK.test(href.trim())) {
        node.removeAttribute('href');
        return;
      }
      // Opens outside the studio, without telling the target where it came from or giving it the opener.
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  });
}

/** Tags model output never needs (nothing that loads or submits); DOMPurify already drops scripts and handlers. */
const FORBID_TAGS = [
  'img',
  'picture',
  'source',
  'video',
  'audio',
  'svg',
  'math',
  'style',
  'form',
  'input',
  'button',
  'textarea',
  'select',
  'iframe',
  'frame',
  'object',
  'embed',
];

/**
 * Markdown to HTML that is safe to insert: no script, no event handler, no remote content, no unsafe link.
 * `references` are definitions from elsewhere in the same answer, when `text` is one of its blocks.
 */
export function renderMarkdown(text: string, references: LinkReferences = {}): string {
  installHooks();
  return DOMPurify.sanitize(markdownParser.render(text, { references: { ...references } }), {
    FORBID_TAGS,
    FORBID_ATTR: ['style', 'srcset'],
    ALLOW_DATA_ATTR: false,
  });
}
