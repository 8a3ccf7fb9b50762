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
 * The studio's markdown-it: model output is text from outside, so raw HTML in it is shown as text (`html: false`),
 * and markdown-it's own link check already refuses `javascript:`, `vbscript:`, `file:` and most `data:` targets.
 * What it renders is not yet safe to insert: renderMarkdown() cleans it with DOMPurify, as a second wall.
 */
export const markdownParser = new MarkdownIt({
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
markdownParser.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx]!;
  const alt = markdownParser.utils.escapeHtml(token.content);
  const src = markdownParser.utils.escapeHtml(token.attrGet('src') ?? '');
  return `<span class="md-image-blocked" title="${src}">[image not loaded${alt ? `: ${alt}` : ''}]</span>`;
};

/**
 * Link reference definitions by label, as markdown-it keeps them in its `env`: `[docs]: https://…` is what `[docs]`
 * anywhere in the same text links to.
 */
export type LinkReferences = Record<string, { href: string; title: string }>;
