import type { Page } from 'playwright-core';

/**
 * Every operation Swagger UI has shown on its page, as `METHOD /path`, scrolled through from top to bottom: with as
 * many operations as this API has, it draws only those near the window (the rest as it scrolls), so a count of what
 * is drawn at once says nothing of whether each renders.
 */
export async function renderedOperations(page: Page): Promise<Set<string>> {
  await page.locator('.opblock-summary-path').first().waitFor({ timeout: 15_000 });
  const seen = new Set<string>();
  for (let step = 0; step < 400; step++) {
    const shown = await page.locator('.opblock-summary').evaluateAll((blocks) =>
      blocks.map((b) => {
        const method = b.querySelector('.opblock-summary-method')?.textContent ?? '';
        const path = b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
        return `${method.trim().toUpperCase()} ${path}`;
      }),
    );
    for (const operation of shown) seen.add(operation);
    const atEnd = await page.evaluate(
      () => window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2,
    );
    if (atEnd) break;
    await page.mouse.wheel(0, 500);
    await page.waitForTimeout(60);
  }
  return seen;
}

/** The operations /openapi.json declares, as `METHOD /path`. */
export async function declaredOperations(baseUrl: string): Promise<Set<string>> {
  const doc = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: Record<string, object> };
  return new Set(
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'put', 'post', 'patch', 'delete'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    ),
  );
}
