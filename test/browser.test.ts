import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLES } from './examples.js';
import { startedForSuite } from './fixture.js';

// Each example's page in real headless Chromium: an upload through the form,
// a denied filename with its reason in the status box, a download by its
// link, and the traversal link refused. Set PATHGATE_SCREENSHOT=<file.png> to
// save the Fastify page as it looks after the denied upload.

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(
    `test/browser.test.ts is skipped: ${CHROMIUM} is missing (Debian: apt-get install chromium)`,
  );
}

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The status box once it shows the answer to the action just taken. */
async function statusAfter(page: Page, action: () => Promise<void>): Promise<[string, string]> {
  await page.$eval('#status', (box) => {
    box.textContent = '';
    box.className = '';
  });
  await action();
  const box = page.locator('#status.ok, #status.denied');
  await box.waitFor();
  return [(await box.getAttribute('class')) ?? '', (await box.textContent()) ?? ''];
}

describe.skipIf(!hasChromium)('the examples in headless Chromium', () => {
  let profile: string;
  let browser: BrowserContext;

  beforeAll(async () => {
    // A fresh profile per run: --user-data-dir, which Playwright passes for us.
    profile = mkdtempSync(join(tmpdir(), 'pathgate-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 900, height: 1000 },
    });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  describe.each(EXAMPLES)('the $name example', (example) => {
    const app = startedForSuite(example);
    let page: Page;

    beforeAll(async () => {
      page = await browser.newPage();
      await page.goto(app.url);
      await page.locator('#list-public li', { hasText: 'readme.txt' }).waitFor();
    }, 15_000);

    afterAll(() => page?.close());

    it('uploads a file through the form and lists it', async () => {
      await page.setInputFiles('#upload-file', {
        name: 'note.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from('from the browser\n'),
      });
      const [kind, text] = await statusAfter(page, () => page.click('#upload-form button'));
      expect([kind, text]).toEqual(['ok', 'Uploaded note.txt']);
      await page.locator('#list-uploads li', { hasText: 'note.txt' }).waitFor();
      expect(readFileSync(join(app.root, 'uploads', 'note.txt'), 'utf8')).toBe(
        'from the browser\n',
      );
    });

    it('shows the reason when a filename is denied', async () => {
      await page.fill('#upload-name', '../../evil.txt');
      const [kind, text] = await statusAfter(page, () => page.click('#upload-form button'));
      expect(kind).toBe('denied');
      expect(text).toContain('403');
      expect(text).toContain('path-not-in-allowlist');
      expect(existsSync(join(dirname(app.root), 'evil.txt'))).toBe(false);
      const screenshot = process.env.PATHGATE_SCREENSHOT;
      if (screenshot && example.name === 'fastify') {
        await page.screenshot({ path: screenshot, fullPage: true });
      }
      await page.fill('#upload-name', '');
    });

    it('shows the reason when the open box asks for ../../etc/passwd', async () => {
      const [kind, text] = await statusAfter(page, () => page.click('#open-form button'));
      expect(kind).toBe('denied');
      expect(text).toContain('path-not-in-allowlist');
    });

    it('opens a folder in place', async () => {
      await page.click('#list-public a:text-is("docs/")');
      await page.locator('#list-public li li', { hasText: 'guide.md' }).waitFor();
    });

    it('downloads a public file by its link', async () => {
      const link = page.locator('#list-public a', { hasText: 'readme.txt' });
      const [response] = await Promise.all([page.waitForEvent('response'), link.click()]);
      expect(response.url()).toBe(`${app.url}/files/public/readme.txt`);
      expect(response.status()).toBe(200);
      expect(await page.locator('body').textContent()).toContain(
        'Files in public/ can be read, never written.',
      );
      await page.goBack();
      await page.locator('#list-public li', { hasText: 'readme.txt' }).waitFor();
    });

    it('refuses the traversal link with a 403 and its reason', async () => {
      const [response] = await Promise.all([
        page.waitForEvent('response'),
        page.click('#traversal-link'),
      ]);
      expect(response.url()).toBe(`${app.url}/files/..%2F..%2Fetc%2Fpasswd`);
      expect(response.status()).toBe(403);
      expect(await response.json()).toMatchObject({
        code: 'PATHGATE_DENIED',
        reason: 'path-not-in-allowlist',
      });
      expect(await page.locator('body').textContent()).toContain('path-not-in-allowlist');
      // Back on the page once its lists are in: no request of it is left in flight.
      await page.goBack();
      await page.locator('#list-public li', { hasText: 'readme.txt' }).waitFor();
    });
  });
});
