import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt from 'markdown-it';

/** The languages agents write code in most; a fence in another language is shown uncoloured. */
const LANGUAGES = { bash, css, diff, go, java, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
hljs.registerAliases(['sh', 'shell', 'console'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx', 'mjs', 'cjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['html', 'svg', 'vue'], { languageName: 'xml' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['md'], { languageName: 'markdown' });
hljs.registerAliases(['patch'], { languageName: 'diff' });

/**
 * Model output is text from outside: raw HTML in it is shown as text (`html: false`), and markdown-it's own link
 * check already refuses `javascript:`, `vbscript:`, `file:` and most `data:` targets. DOMPurify then cleans what
 * markdown-it produced, as a second wall.
 */
const md = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  highlight(code, lang) {
    const language = lang && hljs.getLanguage(lang) ? lang : null;
    if (!language) return '';
    try {
      return hljs.highlight(code, { language, ignoreIllegals: true }).value;
    } catch {
      return '';
    }
  },
});

/**
 * No image is loaded: a remote one could track the reader or show what the model was told to show. Its alt text
 * and address stay readable in its place.
 */
md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx]!;
  const alt = md.utils.escapeHtml(token.content);
  const src = md.utils.escapeHtml(token.attrGet('src') ?? '');
  return `<span class="md-image-blocked" title="${src}">[image not loaded${alt ? `: ${alt}` : ''}]</span>`;
};

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

/** Markdown to HTML that is safe to insert: no script, no event handler, no remote content, no unsafe link. */
export function renderMarkdown(text: string): string {
  installHooks();
  return DOMPurify.sanitize(md.render(text), {
    FORBID_TAGS,
    FORBID_ATTR: ['style', 'srcset'],
    ALLOW_DATA_ATTR: false,
  });
}
